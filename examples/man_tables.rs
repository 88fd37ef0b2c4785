//! Writes the man page's rows of the protected table (PROTECTED PATHS)
//! from `src/protected.rs`, between the marks `protected::MAN_BEGIN` and
//! `protected::MAN_END`: the table is defined once, in code, and the page
//! is generated from it. `tests/protected_table.rs` fails when the page is
//! not what this writes.
//!
//! Usage: `cargo run --example man_tables` (from the checkout).

use dcjail::protected::{man_rows, MAN_BEGIN, MAN_END};

fn main() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/man/dcjail.1");
    let page = match std::fs::read_to_string(path) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("man_tables: cannot read {path}: {e}");
            std::process::exit(1);
        }
    };
    let (Some(b), Some(e)) = (page.find(MAN_BEGIN), page.find(MAN_END)) else {
        eprintln!("man_tables: {path} lacks the marks around the protected table's rows");
        std::process::exit(1);
    };
    let start = b + MAN_BEGIN.len();
    let out = format!("{}{}{}", &page[..start], man_rows(), &page[e..]);
    if out != page {
        if let Err(e) = std::fs::write(path, out) {
            eprintln!("man_tables: cannot write {path}: {e}");
            std::process::exit(1);
        }
        println!("man_tables: wrote the protected table's rows into {path}");
    }
}
