//! The demo prompt `greeting`, with one required argument `name`.

use rmcp::{
    handler::server::{router::prompt::PromptRouter, wrapper::Parameters},
    model::{GetPromptResult, PromptMessage, Role},
    prompt, prompt_router,
};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::server::DemoServer;

/// Arguments of the `greeting` prompt.
#[derive(Debug, Deserialize, JsonSchema)]
struct GreetingArgs {
    /// Name of the person to greet.
    name: String,
}

#[prompt_router(vis = "pub(crate)")]
impl DemoServer {
    /// Asks the model to greet someone by name.
    #[prompt(name = "greeting", title = "Greeting")]
    async fn greeting(&self, Parameters(args): Parameters<GreetingArgs>) -> GetPromptResult {
        tracing::info!(prompt = "greeting", "prompt requested");
        GetPromptResult::new(vec![PromptMessage::new_text(
            Role::User,
            format!(
                "Please write a short, friendly greeting for {}, who is trying out the Tollgate MCP gateway.",
                args.name
            ),
        )])
        .with_description(format!("A friendly greeting for {}", args.name))
    }
}

/// The router holding every demo prompt, used by [`DemoServer::new`].
pub(crate) fn router() -> PromptRouter<DemoServer> {
    DemoServer::prompt_router()
}
