//! A pool of simulator Web Workers, the one way any panel runs simulations: the Serving Lab uses one, a
//! study as many as it is given. Each worker's answers reach the page with the worker's index; dropping the
//! pool (or a worker) terminates it at once, mid-run — that is Cancel.

use gloo_worker::{Spawnable, WorkerBridge};
use inferscale_worker::{Input, Output, SimWorker};

pub struct Pool {
    bridges: Vec<WorkerBridge<SimWorker>>,
}

impl Pool {
    /// `n` fresh workers whose answers go to `on(worker, output)`.
    pub fn spawn(n: usize, on: impl Fn(usize, Output) + Clone + 'static) -> Pool {
        let bridges = (0..n)
            .map(|w| {
                let on = on.clone();
                SimWorker::spawner().as_module(false).callback(move |out: Output| on(w, out)).spawn("./worker.js")
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
