//! Opening a file for the device: O_DIRECT when the mode asks for it and the filesystem
//! allows it, buffered otherwise. A `DeviceFile` never changes mode after it is opened.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::aligned::{AlignedBuf, IO_ALIGN};
use super::config::DirectMode;
use super::error::DeviceError;
use super::pread;

/// A read-only file opened by a [`Device`](super::Device).
#[derive(Debug)]
pub struct DeviceFile {
    path: PathBuf,
    file: File,
    /// Size when opened. coopscan's files are immutable once written, so it stays valid.
    len: u64,
    direct: bool,
}

impl DeviceFile {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// File size in bytes at open time.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True when reads bypass the page cache (opened with O_DIRECT).
    pub fn is_direct(&self) -> bool {
        self.direct
    }

    pub(super) fn file(&self) -> &File {
        &self.file
    }
}

/// The result of an open; `refused` carries the error that made `Auto` fall back.
pub(super) struct Opened {
    pub file: DeviceFile,
    pub refused: Option<io::Error>,
}

pub(super) fn open(path: &Path, mode: DirectMode) -> Result<Opened, DeviceError> {
    open_with(path, mode, open_direct)
}

/// `open` with the O_DIRECT attempt injected, so tests can make it fail like a filesystem
/// that refuses direct I/O.
pub(super) fn open_with(
    path: &Path,
    mode: DirectMode,
    try_direct: impl FnOnce(&Path) -> io::Result<File>,
) -> Result<Opened, DeviceError> {
    let open_error = |source| DeviceError::Open {
        path: path.to_path_buf(),
        source,
    };
    let (file, direct, refused) = match mode {
        DirectMode::Off => (open_buffered(path).map_err(open_error)?, false, None),
        DirectMode::Required | DirectMode::Auto => match try_direct(path) {
            Ok(file) => (file, true, None),
            Err(source) if !is_direct_refusal(&source) => return Err(open_error(source)),
            Err(source) if mode == DirectMode::Required => {
                let path = path.to_path_buf();
                return Err(DeviceError::DirectUnsupported { path, source });
            }
            Err(source) => (
                open_buffered(path).map_err(open_error)?,
                false,
                Some(source),
            ),
        },
    };
    let len = file.metadata().map_err(open_error)?.len();
    let path = path.to_path_buf();
    let file = DeviceFile {
        path,
        file,
        len,
        direct,
    };
    Ok(Opened { file, refused })
}

fn open_buffered(path: &Path) -> io::Result<File> {
    File::open(path)
}

/// Opens with O_DIRECT and reads the first block: some filesystems accept the flag on open
/// and refuse only the first read, and finding out here keeps the file's mode fixed.
fn open_direct(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)?;
    let mut probe = AlignedBuf::zeroed(IO_ALIGN);
    pread::read_full(&file, 0, &mut [&mut probe])?;
    Ok(file)
}

/// The errors a filesystem gives when it does not support O_DIRECT at all (as opposed to
/// a missing file or a permission problem, which buffered reads would hit too).
fn is_direct_refusal(err: &io::Error) -> bool {
    matches!(
        err.raw_os_error(),
        Some(libc::EINVAL) | Some(libc::EOPNOTSUPP)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn refuse(_: &Path) -> io::Result<File> {
        Err(io::Error::from_raw_os_error(libc::EINVAL))
    }

    fn temp_file() -> tempfile::NamedTempFile {
        let mut tmp = tempfile::NamedTempFile::new().expect("temp file");
        tmp.write_all(&[1; IO_ALIGN]).expect("write");
        tmp
    }

    #[test]
    fn auto_falls_back_when_direct_is_refused_on_first_read() {
        let tmp = temp_file();
        let opened = open_with(tmp.path(), DirectMode::Auto, refuse).expect("fallback");
        assert!(!opened.file.is_direct());
        assert_eq!(opened.file.len(), IO_ALIGN as u64);
        let refused = opened.refused.expect("refusal reported");
        assert_eq!(refused.raw_os_error(), Some(libc::EINVAL));
    }

    #[test]
    fn required_reports_the_refusal() {
        let tmp = temp_file();
        let Err(err) = open_with(tmp.path(), DirectMode::Required, refuse) else {
            panic!("Required must not fall back");
        };
        assert!(
            matches!(err, DeviceError::DirectUnsupported { .. }),
            "{err}"
        );
        assert!(err.to_string().contains(&tmp.path().display().to_string()));
    }

    #[test]
    fn other_errors_do_not_trigger_fallback() {
        let tmp = temp_file();
        let denied = |_: &Path| Err(io::Error::from_raw_os_error(libc::EACCES));
        let Err(err) = open_with(tmp.path(), DirectMode::Auto, denied) else {
            panic!("EACCES must not fall back");
        };
        assert!(matches!(err, DeviceError::Open { .. }), "{err}");
    }

    #[test]
    fn direct_open_works_on_the_temp_dir() {
        // The temp dir is ext4 here (../shared/ECOSYSTEM.md); O_DIRECT must be accepted.
        let tmp = temp_file();
        let opened = open(tmp.path(), DirectMode::Required).expect("O_DIRECT on temp dir");
        assert!(opened.file.is_direct() && opened.refused.is_none());
    }
}
