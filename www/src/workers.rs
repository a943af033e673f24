//! A pool of simulator Web Workers, the one way any panel runs simulations: the Serving Lab uses one, a
//! study as many as it is given. Each worker's answers reach the page with the worker's index; dropping the
//! pool (or a worker) terminates it at once, mid-run — that is Cancel.

use std::cell::RefCell;
use std::rc::Weak;

use gloo_worker::{Spawnable, WorkerBridge};
use inferscale_worker::{Input, Output, SimWorker};

pub struct Pool {
    bridges: Vec<WorkerBridge<SimWorker>>,
}

impl Pool {
    /// `n` fresh workers whose answers go to `on(app, worker, output)`.
    pub fn spawn<A: 'static>(n: usize, app: Weak<RefCell<A>>, on: fn(&mut A, usize, Output)) -> Pool {
        let bridges = (0..n)
            .map(|w| {
                let app = app.clone();
                SimWorker::spawner()
                    .as_module(false)
                    .callback(move |out: Output| {
                        if let Some(app) = app.upgrade() {
                            on(&mut app.borrow_mut(), w, out);
                        }
                    })
                    .spawn("./worker.js")
            })
            .collect();
        Pool { bridges }
    }

    pub fn send(&self, w: usize, msg: Input) {
        if let Some(b) = self.bridges.get(w) {
            b.send(msg);
        }
    }

    pub fn len(&self) -> usize {
        self.bridges.len()
    }
}
