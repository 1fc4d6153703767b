//! How the CLI prints an error and its causes.
//!
//! Errors at crate boundaries often put their source into their own message *and*
//! expose it as `source()`, so printing the chain (`{:#}`) repeated the same text
//! three or four times. Here each cause is printed only if the text so far does not
//! already contain it.

/// `e` and its causes, joined by ": ", without repeats.
pub fn error_chain(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let message = cause.to_string();
        if text.contains(&message) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&message);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("reading x: {source}")]
    struct Outer {
        #[source]
        source: std::io::Error,
    }

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let e = anyhow::Error::new(Outer { source: io }).context("table lineitem");
        assert_eq!(error_chain(&e), "table lineitem: reading x: no such file");
        assert_eq!(
            format!("{e:#}").matches("no such file").count(),
            2,
            "what {{:#}} did"
        );
    }
}
