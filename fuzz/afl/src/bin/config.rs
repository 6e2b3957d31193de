//! AFL++ entry point for the `config` target.

fn main() {
    afl::fuzz!(|data: &[u8]| {
        if let Some(target) = tollgate_fuzz::target("config") {
            target(data);
        }
    });
}
