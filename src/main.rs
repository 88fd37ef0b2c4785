fn main() {
    std::process::exit(dcjail::cli::main());
}
