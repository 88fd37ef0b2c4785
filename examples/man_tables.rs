//! Writes the man page's generated parts from the code that defines them:
//! the rows of the protected table (PROTECTED PATHS) from
//! `src/protected.rs`, between the marks `protected::MAN_BEGIN` and
//! `protected::MAN_END`, and the OPTIONS entries from the clap flag
//! definitions (`src/manpage.rs`), between `manpage::OPTIONS_BEGIN` and
//! `manpage::OPTIONS_END`. `tests/protected_table.rs` and `tests/cli.rs`
//! fail when the page is not what this writes.
//!
//! Usage: `cargo run --example man_tables` (from the checkout).

use dcjail::manpage::{options, OPTIONS_BEGIN, OPTIONS_END};
use dcjail::protected::{man_rows, MAN_BEGIN, MAN_END};

/// `page` with what lies between `begin` and `end` replaced by `body`.
fn splice(page: &str, begin: &str, end: &str, body: &str, what: &str) -> Result<String, String> {
    let (Some(b), Some(e)) = (page.find(begin), page.find(end)) else {
        return Err(format!("the page lacks the marks around {what}"));
    };
    let start = b + begin.len();
    if e < start {
        return Err(format!("the marks around {what} are out of order"));
    }
    Ok(format!("{}{}{}", &page[..start], body, &page[e..]))
}

fn main() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/man/dcjail.1");
    let page = match std::fs::read_to_string(path) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("man_tables: cannot read {path}: {e}");
            std::process::exit(1);
        }
    };
    let out = splice(
        &page,
        MAN_BEGIN,
        MAN_END,
        &man_rows(),
        "the protected table's rows",
    )
    .and_then(|p| {
        splice(
            &p,
            OPTIONS_BEGIN,
            OPTIONS_END,
            &options(),
            "the OPTIONS entries",
        )
    });
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            eprintln!("man_tables: {path}: {e}");
            std::process::exit(1);
        }
    };
    if out != page {
        if let Err(e) = std::fs::write(path, out) {
            eprintln!("man_tables: cannot write {path}: {e}");
            std::process::exit(1);
        }
        println!("man_tables: wrote the generated parts of {path}");
    }
}
