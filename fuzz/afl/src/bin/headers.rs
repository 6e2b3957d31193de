//! AFL++ entry point for the `headers` target.

fn main() {
    afl::fuzz!(|data: &[u8]| {
        if let Some(target) = tollgate_fuzz::target("headers") {
            target(data);
        }
    });
}
