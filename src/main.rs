fn main() -> std::process::ExitCode {
    cdkd::run()
}
