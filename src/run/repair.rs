//! A final answer checked against the agent's output schema, and the
//! repair turns that send one that does not match back to the model with
//! what is wrong (design D22). Out of the loop's file and out of line: only
//! a shaped answer comes here, and a sub-agent's thread waits on the
//! network inside the loop, whose frame is on every such stack (design
//! §3.15).

use super::{Ctx, MAX_TURNS, Outcome};
use crate::error::{During, Error};
use crate::provider::{Message, Request};
use crate::schema::{Checked, OutputSchema};
use crate::trace::event::TraceEvent;

/// What became of an answer checked against the output schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shaped {
    /// It matches: the outcome holds it, compact, and its value.
    Accepted,
    /// It does not: it went back to the model, with what is wrong, as the
    /// next turn.
    SentBack,
}

/// The final `answer` of an agent with the output schema `shape`: accepted
/// into `out`, or sent back in `req` for a repair; a failure once the
/// repairs or the turns are spent, or when the deadline passes while it is
/// checked.
#[inline(never)]
pub(super) fn shaped(
    req: &mut Request,
    out: &mut Outcome,
    shape: &OutputSchema,
    answer: String,
    ctx: &Ctx,
) -> Result<Shaped, Error> {
    match shape.check(&answer, Some(ctx.deadline.at)) {
        Checked::Valid(value, text) => {
            out.content = text;
            out.output = Some(value);
            Ok(Shaped::Accepted)
        }
        Checked::TimedOut => Err(Error::TimedOut {
            secs: ctx.deadline.secs,
            during: During::CheckingAnswer,
        }),
        Checked::Invalid(problems) => {
            send_back(req, out, shape, &problems, answer, ctx)?;
            Ok(Shaped::SentBack)
        }
    }
}

/// An answer that does not match the output schema, with its `problems`:
/// a failure once the repairs are spent (or the turns), else the answer and
/// what is wrong with it go back to the model as the next turn.
fn send_back(
    req: &mut Request,
    out: &mut Outcome,
    shape: &OutputSchema,
    problems: &[String],
    answer: String,
    ctx: &Ctx,
) -> Result<(), Error> {
    let first = problems.first().cloned().unwrap_or_default();
    let turn = out.turns;
    if out.repairs >= shape.max_repairs {
        return Err(Error::Output {
            repairs: out.repairs,
            first,
        });
    }
    // A repair is a turn like any other (design §3.7).
    if turn >= MAX_TURNS {
        return Err(Error::TooManyTurns(MAX_TURNS));
    }
    out.repairs += 1;
    ctx.verbose.line(&format!(
        "[turn {turn}] Answer does not match the output schema: {first} (repair {} of {})",
        out.repairs, shape.max_repairs
    ));
    let repair = TraceEvent::Repair {
        repair: out.repairs,
        of: shape.max_repairs,
        problems,
    };
    ctx.ledger.event(&ctx.place, turn, repair);
    req.messages.push(Message::Assistant {
        content: answer,
        tool_calls: Vec::new(),
        reasoning: Vec::new(),
    });
    req.messages
        .push(Message::user(shape.repair_message(problems)));
    Ok(())
}
