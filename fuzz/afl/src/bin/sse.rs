//! AFL++ entry point for the `sse` target.

fn main() {
    afl::fuzz!(|data: &[u8]| {
        if let Some(target) = tollgate_fuzz::target("sse") {
            target(data);
        }
    });
}
