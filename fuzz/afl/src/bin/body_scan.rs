//! AFL++ entry point for the `body_scan` target.

fn main() {
    afl::fuzz!(|data: &[u8]| {
        if let Some(target) = tollgate_fuzz::target("body_scan") {
            target(data);
        }
    });
}
