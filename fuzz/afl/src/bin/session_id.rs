//! AFL++ entry point for the `session_id` target.

fn main() {
    afl::fuzz!(|data: &[u8]| {
        if let Some(target) = tollgate_fuzz::target("session_id") {
            target(data);
        }
    });
}
