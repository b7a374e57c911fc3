//! `--json`'s `refused`: the Go original's heuristic (its 1.8 docs,
//! "Refusal Detection") for an answer that declines the task in words. A
//! refusal the provider signals is not an answer at all: the run fails
//! (design §5.2), so this only ever looks at an answer axe printed.

/// Phrases that decline, lowercase, as the Go original lists them.
const DECLINING: &[&str] = &[
    "i cannot",
    "i can't",
    "i'm unable to",
    "i am unable to",
    "i'm not able to",
    "i am not able to",
    "i must decline",
    "i don't have the ability",
    "i do not have the ability",
];

/// What makes "as an AI" a refusal rather than a description.
const LIMITING: &[&str] = &["cannot", "can't", "unable", "not able", "won't", "will not"];

/// Whether `answer` reads as the model declining: one of [`DECLINING`], or
/// "as an AI" with limiting language, in any case and with either
/// apostrophe. A heuristic: "I cannot find a bug" counts too, as there.
pub fn refused(answer: &str) -> bool {
    let text = answer.to_lowercase().replace('\u{2019}', "'");
    DECLINING.iter().any(|p| text.contains(p))
        || (text.contains("as an ai") && LIMITING.iter().any(|p| text.contains(p)))
}

#[cfg(test)]
mod tests {
    use super::refused;

    #[test]
    fn declining_phrases_and_as_an_ai_with_limits() {
        assert!(refused("I’m unable to help with that."));
        assert!(refused("Sorry. I CANNOT do this."));
        assert!(refused("As an AI, I won't give medical advice."));
        assert!(!refused("As an AI model trained on code, here is the fix."));
        assert!(!refused("The build passes."));
    }
}
