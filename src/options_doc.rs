//! An options document as JavaScript hands it over (see the core's `fn_markers`): its JSON, the
//! functions its markers name (each already in the bridged calling convention), and the
//! addon's own objects (a store, a compactor, a clock) by their shared form.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use napi::bindgen_prelude::ExternalRef;
use toolnexus_core::callback::SharedCallback;
use toolnexus_core::fn_markers::{self, HostObject, Table};

use crate::bridge::{JsCallback, JsonFn};

/// What an addon object hands a document as itself: the core value behind it.
pub struct Shared(pub HostObject);

struct JsTable {
    fns: RefCell<Vec<Option<JsonFn>>>,
    objects: Vec<HostObject>,
}

impl Table for JsTable {
    fn callback(&self, n: usize) -> Option<SharedCallback> {
        let f = self.fns.borrow_mut().get_mut(n)?.take()?;
        Some(Arc::new(JsCallback(f)))
    }

    fn object(&self, n: usize) -> Option<HostObject> {
        self.objects.get(n).cloned()
    }
}

/// Run `read` with the document's markers standing for `fns` and `objects`. A function no
/// field took is let go when the read ends.
pub(crate) fn read<R>(fns: Vec<JsonFn>, objects: Vec<ExternalRef<Shared>>, read: impl FnOnce() -> R) -> R {
    let table = JsTable {
        fns: RefCell::new(fns.into_iter().map(Some).collect()),
        objects: objects.iter().map(|o| o.0.clone()).collect(),
    };
    fn_markers::read_with(Rc::new(table), read)
}
