//! A small pool for the glob walk: directories are read by several threads
//! at once, because reading a directory costs the kernel far more than the
//! walk's own work on it (ext4 hashes and sorts every name it returns).
//! Work items sit on one shared stack; each is taken by one thread, which
//! pushes back what it finds to do next. The calling thread works too, and
//! the others are only started once it has seen enough items to make them
//! pay: a walk of a few directories starts no thread. Every thread has been
//! joined when `run` returns, so the caller is single-threaded again.

use std::sync::{Condvar, Mutex};

/// Items the calling thread handles alone before the others start.
const ALONE: usize = 8;

struct Queue<T, E> {
    items: Vec<T>,
    /// Threads holding an item.
    busy: usize,
    failed: Option<E>,
    /// A thread died holding an item: everyone stops.
    died: bool,
}

struct Shared<T, E> {
    q: Mutex<Queue<T, E>>,
    cv: Condvar,
}

impl<T, E> Shared<T, E> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue<T, E>> {
        // A poisoned lock means a thread panicked, which the walk never
        // does; its queue is still consistent.
        self.q.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The next item, or None once there is none left and none coming, or
    /// an item failed.
    fn take(&self) -> Option<T> {
        let mut q = self.lock();
        loop {
            if q.failed.is_some() || q.died {
                return None;
            }
            if let Some(t) = q.items.pop() {
                q.busy += 1;
                return Some(t);
            }
            if q.busy == 0 {
                return None;
            }
            q = self.cv.wait(q).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Hands back what one item produced, or its failure.
    fn done(&self, more: &mut Vec<T>, r: Result<(), E>) {
        let mut q = self.lock();
        q.busy -= 1;
        match r {
            Err(e) => {
                if q.failed.is_none() {
                    q.failed = Some(e);
                }
                more.clear();
            }
            Ok(()) => q.items.append(more),
        }
        let finished = q.failed.is_some() || (q.items.is_empty() && q.busy == 0);
        let waiting = q.items.len();
        drop(q);
        if finished || waiting > 1 {
            self.cv.notify_all();
        } else if waiting == 1 {
            self.cv.notify_one();
        }
    }
}

/// Held while a thread works on an item: if the work panics, the others
/// are told to stop instead of waiting for the item's results forever.
struct Holding<'a, T, E>(&'a Shared<T, E>);

impl<T, E> Drop for Holding<'_, T, E> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.lock().died = true;
            self.0.cv.notify_all();
        }
    }
}

/// The work done on one item: it may push more items.
type Work<'a, T, S, E> = &'a (dyn Fn(T, &mut S, &mut Vec<T>) -> Result<(), E> + Sync);

/// Takes items until none is left, working on each.
fn serve<T, S, E>(
    shared: &Shared<T, E>,
    st: &mut S,
    work: Work<'_, T, S, E>,
    mut after_each: impl FnMut(),
) {
    let mut more = Vec::new();
    while let Some(t) = shared.take() {
        let held = Holding(shared);
        let r = work(t, st, &mut more);
        std::mem::forget(held);
        shared.done(&mut more, r);
        after_each();
    }
}

/// Runs `work` on every item of `items` and on every item it pushes, on up
/// to `threads` threads (the caller's included); each thread keeps its own
/// state, made by `state`. Returns every thread's state, or the first
/// error: once an item fails, no new item is started. A thread that died
/// (a panic) took its state with it: that is the error `lost` makes.
pub fn run<T, S, E, W>(
    items: Vec<T>,
    threads: usize,
    state: impl Fn() -> S + Sync,
    work: W,
    lost: impl FnOnce() -> E,
) -> Result<Vec<S>, E>
where
    T: Send,
    S: Send,
    E: Send,
    W: Fn(T, &mut S, &mut Vec<T>) -> Result<(), E> + Sync,
{
    let shared = Shared {
        q: Mutex::new(Queue {
            items,
            busy: 0,
            failed: None,
            died: false,
        }),
        cv: Condvar::new(),
    };
    let states = std::thread::scope(|s| {
        let mut mine = state();
        let mut helpers = Vec::new();
        let mut seen = 0usize;
        serve(&shared, &mut mine, &work, || {
            seen += 1;
            if seen != ALONE || threads < 2 || shared.lock().items.is_empty() {
                return;
            }
            for _ in 1..threads {
                // A thread that cannot be started leaves its share to the
                // others: slower, never wrong.
                let started = std::thread::Builder::new().spawn_scoped(s, || {
                    let mut st = state();
                    serve(&shared, &mut st, &work, || {});
                    st
                });
                if let Ok(h) = started {
                    helpers.push(h);
                }
            }
        });
        let mut all = vec![mine];
        let mut lost = false;
        for h in helpers {
            match h.join() {
                Ok(st) => all.push(st),
                Err(_) => lost = true,
            }
        }
        (all, lost)
    });
    let failed = shared.lock().failed.take();
    match (failed, states) {
        (Some(e), _) => Err(e),
        (None, (_, true)) => Err(lost()),
        (None, (all, false)) => Ok(all),
    }
}
