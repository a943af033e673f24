//! The worker binary: registers the simulator worker (Trunk builds it as `worker.js` + `worker_bg.wasm`).

#[cfg(target_arch = "wasm32")]
fn main() {
    use gloo_worker::Registrable;
    inferscale_worker::SimWorker::registrar().register();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("the worker runs in a browser; build it with Trunk (see README)");
}
