//! The export bar every panel shows, and the downloads behind it: text files (JSON, CSV, Markdown) and a
//! canvas as PNG. File names say what was run: `inferscale-{what}-{scenario}-seed{seed}.{ext}`.

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::HtmlCanvasElement;

use crate::components::table::esc;

/// The bar's buttons: `(id, label)`; each panel listens to its own ids.
pub fn bar(label: &str, items: &[(&str, &str)]) -> String {
    let buttons: String = items
        .iter()
        .map(|(id, l)| format!("<button type=\"button\" id=\"{id}\" data-export=\"{id}\">{}</button>", esc(l)))
        .collect();
    format!("<div class=\"exports\" role=\"group\" aria-label=\"{}\">{buttons}</div>", esc(label))
}

pub fn download_text(name: &str, text: &str, mime: &str) {
    let parts = js_sys::Array::of1(&JsValue::from_str(text));
    let opts = web_sys::BlobPropertyBag::new();
    opts.set_type(mime);
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &opts) else { return };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else { return };
    click_link(&url, name);
    let _ = web_sys::Url::revoke_object_url(&url);
}

/// Download the canvas `id` as `name`.
pub fn png(id: &str, name: &str) {
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else { return };
    let Some(c) = doc.get_element_by_id(id).and_then(|e| e.dyn_into::<HtmlCanvasElement>().ok()) else { return };
    if let Ok(url) = c.to_data_url() {
        click_link(&url, name);
    }
}

fn click_link(href: &str, name: &str) {
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else { return };
    let Ok(a) = doc.create_element("a").map(|e| e.unchecked_into::<web_sys::HtmlAnchorElement>()) else { return };
    a.set_href(href);
    a.set_download(name);
    a.click();
}
