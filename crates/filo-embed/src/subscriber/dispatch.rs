//! The ordered reply dispatcher (C19): block replies are produced synchronously inside the
//! session's event listener and delivered to the sink one at a time, in order, on a task of
//! their own. [`BlockDispatcher::flush`] is the flush-before-tool barrier: it waits until every
//! reply sent before the call has been delivered, so a channel shows the text that led to a tool
//! call before the tool runs.
//!
//! A sink that panics or does not finish a delivery within the timeout ends the dispatcher with
//! an error: later sends and flushes report it (the run ends with that error and frees its lane),
//! and nothing else is affected.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::{mpsc, watch};

/// Default time a sink may take to deliver one reply.
pub const DEFAULT_DELIVERY_TIMEOUT: Duration = Duration::from_secs(120);

/// Delivers one item to the sink.
pub type Deliver<T> =
    Arc<dyn Fn(T) -> Pin<Box<dyn Future<Output = ()> + Send + 'static>> + Send + Sync>;

/// Why the dispatcher stopped delivering.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DispatchError {
    #[error("reply sink panicked: {0}")]
    SinkPanicked(String),
    #[error("reply sink did not finish a delivery within {0:?}")]
    SinkTimedOut(Duration),
    #[error("reply dispatcher is closed")]
    Closed,
}

#[derive(Debug, Clone, Default)]
struct Progress {
    delivered: u64,
    failure: Option<DispatchError>,
}

/// Ordered, awaited delivery of replies to a sink.
pub struct BlockDispatcher<T> {
    tx: mpsc::UnboundedSender<(u64, T)>,
    sent: Mutex<u64>,
    progress: watch::Receiver<Progress>,
}

impl<T: Send + 'static> BlockDispatcher<T> {
    /// A dispatcher delivering through `deliver`, each delivery bounded by `timeout`. Needs a
    /// tokio runtime (it spawns its worker).
    pub fn new(deliver: Deliver<T>, timeout: Duration) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let (progress_tx, progress) = watch::channel(Progress::default());
        tokio::spawn(worker(rx, deliver, timeout, progress_tx));
        Self {
            tx,
            sent: Mutex::new(0),
            progress,
        }
    }

    /// Queues `item`; returns its sequence number, or the error that stopped delivery.
    pub fn send(&self, item: T) -> Result<u64, DispatchError> {
        if let Some(failure) = self.failure() {
            return Err(failure);
        }
        // The counter only orders sends; a poisoned lock still holds a valid number.
        let mut sent = self.sent.lock().unwrap_or_else(PoisonError::into_inner);
        *sent += 1;
        self.tx
            .send((*sent, item))
            .map_err(|_| DispatchError::Closed)?;
        Ok(*sent)
    }

    /// The error that stopped delivery, if any.
    pub fn failure(&self) -> Option<DispatchError> {
        self.progress.borrow().failure.clone()
    }

    /// Waits until every item sent before this call is delivered.
    pub async fn flush(&self) -> Result<(), DispatchError> {
        let target = *self.sent.lock().unwrap_or_else(PoisonError::into_inner);
        let mut progress = self.progress.clone();
        let reached = progress
            .wait_for(|p| p.delivered >= target || p.failure.is_some())
            .await
            .map_err(|_| DispatchError::Closed)?;
        match &reached.failure {
            Some(f) => Err(f.clone()),
            None => Ok(()),
        }
    }
}

async fn worker<T>(
    mut rx: mpsc::UnboundedReceiver<(u64, T)>,
    deliver: Deliver<T>,
    timeout: Duration,
    progress: watch::Sender<Progress>,
) {
    while let Some((seq, item)) = rx.recv().await {
        let delivery = AssertUnwindSafe(async { deliver(item).await }).catch_unwind();
        let failure = match tokio::time::timeout(timeout, delivery).await {
            Ok(Ok(())) => None,
            Ok(Err(panic)) => Some(DispatchError::SinkPanicked(panic_text(panic.as_ref()))),
            Err(_) => Some(DispatchError::SinkTimedOut(timeout)),
        };
        let stop = failure.is_some();
        progress.send_modify(|p| {
            p.delivered = seq;
            p.failure = failure;
        });
        if stop {
            return;
        }
    }
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(non-string panic)".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recording(
        log: Arc<Mutex<Vec<String>>>,
        gate: Option<Arc<tokio::sync::Notify>>,
    ) -> Deliver<String> {
        Arc::new(move |item: String| {
            let (log, gate) = (log.clone(), gate.clone());
            Box::pin(async move {
                if let Some(g) = gate {
                    g.notified().await;
                }
                if item == "panic" {
                    panic!("sink exploded");
                }
                log.lock().unwrap().push(item);
            })
        })
    }

    #[tokio::test]
    async fn flush_waits_for_everything_sent_before_it() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let gate = Arc::new(tokio::sync::Notify::new());
        let d = BlockDispatcher::new(
            recording(log.clone(), Some(gate.clone())),
            DEFAULT_DELIVERY_TIMEOUT,
        );
        assert_eq!(d.send("one".into()), Ok(1));
        assert_eq!(d.send("two".into()), Ok(2));
        let flushed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = flushed.clone();
        let barrier = async {
            d.flush().await.unwrap();
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            // What the tool would do now: it must see both replies delivered.
            log.lock().unwrap().clone()
        };
        let release = async {
            for _ in 0..2 {
                tokio::task::yield_now().await;
                assert!(!flushed.load(std::sync::atomic::Ordering::SeqCst));
                gate.notify_one();
            }
        };
        let (seen, ()) = tokio::join!(barrier, release);
        assert_eq!(seen, ["one", "two"]);
    }

    #[tokio::test]
    async fn flush_with_nothing_sent_returns_at_once() {
        let d = BlockDispatcher::new(recording(Arc::default(), None), DEFAULT_DELIVERY_TIMEOUT);
        assert_eq!(d.flush().await, Ok(()));
    }

    #[tokio::test]
    async fn a_panicking_sink_stops_delivery_with_an_error() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let d = BlockDispatcher::new(recording(log.clone(), None), DEFAULT_DELIVERY_TIMEOUT);
        d.send("a".into()).unwrap();
        d.send("panic".into()).unwrap();
        let err = d.flush().await.unwrap_err();
        assert_eq!(err, DispatchError::SinkPanicked("sink exploded".into()));
        assert_eq!(d.send("b".into()), Err(err));
        assert_eq!(*log.lock().unwrap(), ["a"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_hanging_sink_times_out() {
        let gate = Arc::new(tokio::sync::Notify::new());
        let d = BlockDispatcher::new(
            recording(Arc::default(), Some(gate)),
            Duration::from_secs(5),
        );
        d.send("never delivered".into()).unwrap();
        assert_eq!(
            d.flush().await,
            Err(DispatchError::SinkTimedOut(Duration::from_secs(5)))
        );
        assert!(d.failure().is_some());
    }
}
