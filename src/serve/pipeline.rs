//! Requests pipelined on one connection (design §12.1). tiny_http answers
//! a connection's requests in the order they came: an answer is written
//! only once the one before it was. So the dispatcher, which answers some
//! requests itself, must not answer a request whose connection has an
//! earlier one still being served: it would wait for that run, and every
//! other client with it. Such a request is set aside here, by its peer's
//! address, and the worker serving the earlier one takes it next. At most
//! 3 are: tiny_http reads no more of a connection's requests while 4 are
//! unanswered (vendor/tiny_http/AXE.md).

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use tiny_http::Request;

/// A request and when the dispatcher took it.
pub type Taken = (Request, Instant);

/// The connections a worker is serving, each with the requests pipelined
/// behind the one being served, in order.
#[derive(Default)]
pub struct Pipelines(Mutex<HashMap<SocketAddr, VecDeque<Taken>>>);

impl Pipelines {
    /// `taken` back when no earlier request of its connection is being
    /// served; None when it was set aside for the worker serving that one.
    pub fn set_aside(&self, taken: Taken) -> Option<Taken> {
        let Some(peer) = taken.0.remote_addr().copied() else {
            return Some(taken);
        };
        match self.lock().get_mut(&peer) {
            Some(behind) => {
                behind.push_back(taken);
                None
            }
            None => Some(taken),
        }
    }

    /// A worker is handed a request from `peer`: its connection is being
    /// served until [`Pipelines::next`] finds nothing behind it.
    pub fn begin(&self, peer: Option<SocketAddr>) {
        if let Some(peer) = peer {
            self.lock().entry(peer).or_default();
        }
    }

    /// The next request set aside behind the one just served for `peer`;
    /// None, and the connection is no longer being served, when there is
    /// none.
    pub fn next(&self, peer: SocketAddr) -> Option<Taken> {
        let mut map = self.lock();
        let next = map.get_mut(&peer).and_then(VecDeque::pop_front);
        if next.is_none() {
            map.remove(&peer);
        }
        next
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<SocketAddr, VecDeque<Taken>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
