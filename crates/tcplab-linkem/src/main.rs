//! tcplab-linkem as a standalone binary (the library in lib.rs does the work).

fn main() {
    std::process::exit(tcplab_linkem::run(std::env::args().skip(1).collect()));
}
