//! Schemas that apply to the same place in an answer one after another
//! (`$ref`, `allOf`, `anyOf`, `not`, `if`...): a loop of them could never be
//! decided, and a very long chain could exhaust a stack, so both are
//! refused when the schema is read (design §6.9).

use super::compile::{Compiled, Id, Node, place};

/// How many schemas may apply one after another to the same place in the
/// answer (`$ref` to `$ref`, `allOf` inside `allOf`, ...): enough for any
/// schema written by hand, few enough that checking cannot exhaust a stack.
const MAX_CHAIN: usize = 256;

/// Refuses a schema in which schemas apply to one place in the answer in a
/// loop (`$ref` back to itself, through `allOf` or `anyOf`...), which no
/// answer could ever end, or in a chain longer than [`MAX_CHAIN`].
pub fn check(c: &Compiled) -> Result<(), String> {
    // 0: not seen; 1: on the path; 2: done, with its chain length.
    let mut state = vec![0u8; c.nodes.len()];
    let mut length = vec![0usize; c.nodes.len()];
    for start in 0..c.nodes.len() {
        if state[start] != 0 {
            continue;
        }
        let mut stack: Vec<(Id, Vec<Id>, usize)> = vec![(start, children(c, start), 0)];
        state[start] = 1;
        while let Some((node, kids, next)) = stack.last_mut() {
            if let Some(&kid) = kids.get(*next) {
                *next += 1;
                match state[kid] {
                    0 => {
                        state[kid] = 1;
                        let k = children(c, kid);
                        stack.push((kid, k, 0));
                    }
                    1 => {
                        return Err(format!(
                            "{}: its $ref loops back to {} without reaching into the answer, \
                             so no answer could be checked",
                            place(&c.places[*node]),
                            place(&c.places[kid])
                        ));
                    }
                    _ => {}
                }
            } else {
                let n = *node;
                let deepest = kids.iter().map(|k| length[*k]).max().unwrap_or(0);
                length[n] = deepest + 1;
                if length[n] > MAX_CHAIN {
                    return Err(format!(
                        "{}: more than {MAX_CHAIN} schemas apply to one place in the answer \
                         one after another ($ref to $ref, allOf in allOf, ...)",
                        place(&c.places[n])
                    ));
                }
                state[n] = 2;
                stack.pop();
            }
        }
    }
    Ok(())
}

fn children(c: &Compiled, id: Id) -> Vec<Id> {
    match &c.nodes[id] {
        Node::Rules(r) => r.in_place().collect(),
        Node::Always(_) => Vec::new(),
    }
}
