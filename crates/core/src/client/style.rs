//! The two wire styles' names: which format a request is written in (SPEC §8). A leaf, so the
//! modules that shape requests and the options that name a style share it without importing
//! each other.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    OpenAI,
    Anthropic,
}

impl Style {
    /// The `style` option: only the string "anthropic" selects the Anthropic wire.
    pub fn of_option(style: Option<&str>) -> Style {
        if style == Some("anthropic") {
            Style::Anthropic
        } else {
            Style::OpenAI
        }
    }
}

impl Style {
    pub fn parse(s: &str) -> Option<Style> {
        match s {
            "openai" => Some(Style::OpenAI),
            "anthropic" => Some(Style::Anthropic),
            _ => None,
        }
    }
}
