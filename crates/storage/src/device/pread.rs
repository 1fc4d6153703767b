//! The one system call the device issues: `preadv`, looped until the buffers are full or
//! the file ends. A single-buffer read is the one-element case, so there is one read loop.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// Most iovecs one `preadv` call accepts on Linux (`UIO_MAXIOV`). A 16 MB chunk read into
/// 4 KB page frames needs 4096, so longer lists are issued as consecutive calls.
const IOVECS_PER_CALL_MAX: usize = 1024;

/// Reads into `bufs`, in order, starting at file `offset`, until every buffer is full or
/// the file ends. Returns the number of bytes read; fewer than the buffers' total means
/// end of file. `EINTR` is retried. With O_DIRECT the kernel returns a short count only
/// at end of file, so a continuing loop still issues aligned requests.
pub(super) fn read_full(file: &File, offset: u64, bufs: &mut [&mut [u8]]) -> io::Result<usize> {
    let total: usize = bufs.iter().map(|buf| buf.len()).sum();
    let mut done = 0;
    while done < total {
        let iovecs = remaining_iovecs(bufs, done);
        match preadv(file, offset + done as u64, &iovecs) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        }
    }
    Ok(done)
}

/// The iovecs describing the unfilled part of `bufs` after the first `skip` bytes, at most
/// [`IOVECS_PER_CALL_MAX`] of them.
fn remaining_iovecs(bufs: &mut [&mut [u8]], mut skip: usize) -> Vec<libc::iovec> {
    let mut iovecs = Vec::new();
    for buf in bufs.iter_mut() {
        if skip >= buf.len() {
            skip -= buf.len();
            continue;
        }
        let rest = &mut buf[skip..];
        skip = 0;
        iovecs.push(libc::iovec {
            iov_base: rest.as_mut_ptr().cast(),
            iov_len: rest.len(),
        });
        if iovecs.len() == IOVECS_PER_CALL_MAX {
            break;
        }
    }
    iovecs
}

fn preadv(file: &File, offset: u64, iovecs: &[libc::iovec]) -> io::Result<usize> {
    let offset = libc::off_t::try_from(offset)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "offset exceeds off_t"))?;
    // Cannot fail: remaining_iovecs caps the list at IOVECS_PER_CALL_MAX.
    let count = libc::c_int::try_from(iovecs.len()).unwrap_or(libc::c_int::MAX);
    // SAFETY: every iovec points into a distinct `&mut [u8]` that the caller of `read_full`
    // borrows mutably for the whole call, with that slice's exact remaining length, so the
    // kernel writes only to memory we exclusively own; `file` keeps the descriptor open.
    let n = unsafe { libc::preadv(file.as_raw_fd(), iovecs.as_ptr(), count, offset) };
    // A negative return is exactly the error case; otherwise it is a byte count.
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_with(bytes: &[u8]) -> (tempfile::NamedTempFile, File) {
        let mut tmp = tempfile::NamedTempFile::new().expect("temp file");
        tmp.write_all(bytes).expect("write");
        let file = tmp.reopen().expect("reopen");
        (tmp, file)
    }

    #[test]
    fn scatters_in_order_across_buffers() {
        let data: Vec<u8> = (0..=255).collect();
        let (_tmp, file) = file_with(&data);
        let (mut a, mut b) = ([0u8; 100], [0u8; 56]);
        let n = read_full(&file, 100, &mut [&mut a, &mut b]).expect("read");
        assert_eq!(n, 156);
        assert_eq!(a[..], data[100..200]);
        assert_eq!(b[..], data[200..256]);
    }

    #[test]
    fn stops_at_end_of_file() {
        let (_tmp, file) = file_with(&[5; 10]);
        let mut buf = [0u8; 64];
        assert_eq!(read_full(&file, 4, &mut [&mut buf]).expect("read"), 6);
        assert_eq!(buf[..6], [5; 6]);
    }

    #[test]
    fn more_buffers_than_one_call_takes() {
        let count = IOVECS_PER_CALL_MAX * 2 + 3;
        let data: Vec<u8> = (0..count).map(|i| (i % 251) as u8).collect();
        let (_tmp, file) = file_with(&data);
        let mut frames = vec![[0u8; 1]; count];
        let mut bufs: Vec<&mut [u8]> = frames.iter_mut().map(|f| &mut f[..]).collect();
        assert_eq!(read_full(&file, 0, &mut bufs).expect("read"), count);
        assert!(frames.iter().zip(&data).all(|(f, d)| f[0] == *d));
    }

    #[test]
    fn remaining_iovecs_skips_filled_part() {
        let (mut a, mut b) = ([0u8; 8], [0u8; 8]);
        let iovecs = remaining_iovecs(&mut [&mut a, &mut b], 10);
        assert_eq!(iovecs.len(), 1);
        assert_eq!(iovecs[0].iov_len, 6);
    }
}
