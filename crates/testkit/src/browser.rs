//! A real headless Chromium for the dashboard's tests, driven over the DevTools protocol.
//!
//! [`Browser::start`] joins the run's shared Chromium (`HERALD_TEST_CHROMIUM_WS`, set by
//! `scripts/test`) or starts a private one. Each [`Page`] lives in a browser context of its
//! own, so tests running at once never share cookies. The helpers act as a user does: real
//! mouse clicks at an element's centre, typed text, key presses; elements are found by their
//! label or visible text, the names DECISIONS.md "Dashboard" promises.

mod cdp;
mod launch;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use base64::Engine as _;
use serde_json::{Value, json};

pub use cdp::Cdp;
pub use launch::{OwnedChromium, find_chromium};

/// How long a page may take to load or a condition to become true.
const WAIT: Duration = Duration::from_secs(15);

/// A connection to a Chromium.
pub struct Browser {
    cdp: Cdp,
    _owned: Option<OwnedChromium>,
}

impl Browser {
    /// The shared Chromium of the run when `HERALD_TEST_CHROMIUM_WS` names one, else a new
    /// private one (killed when this value drops).
    pub async fn start() -> anyhow::Result<Browser> {
        if let Some(ws) = std::env::var("HERALD_TEST_CHROMIUM_WS")
            .ok()
            .filter(|s| !s.is_empty())
        {
            return Ok(Browser {
                cdp: Cdp::connect(&ws).await?,
                _owned: None,
            });
        }
        let binary = find_chromium().ok_or_else(|| {
            anyhow!("Chromium is not installed: `apt-get install chromium` (scripts/test does it as root)")
        })?;
        let owned = launch::start(&binary).await?;
        Ok(Browser {
            cdp: Cdp::connect(&owned.ws_url).await?,
            _owned: Some(owned),
        })
    }

    /// A new tab in a fresh browser context (its own cookies), 1280 x 800, light.
    pub async fn new_page(&self) -> anyhow::Result<Page> {
        let cdp = self.cdp.clone();
        let ctx = cdp
            .call(
                None,
                "Target.createBrowserContext",
                json!({ "disposeOnDetach": true }),
            )
            .await?;
        let context = str_field(&ctx, "browserContextId")?;
        let target = cdp
            .call(
                None,
                "Target.createTarget",
                json!({ "url": "about:blank", "browserContextId": context }),
            )
            .await?;
        let target_id = str_field(&target, "targetId")?;
        let attached = cdp
            .call(
                None,
                "Target.attachToTarget",
                json!({ "targetId": target_id, "flatten": true }),
            )
            .await?;
        let session = str_field(&attached, "sessionId")?;
        for domain in ["Page.enable", "Runtime.enable", "Log.enable"] {
            cdp.call(Some(&session), domain, json!({})).await?;
        }
        let page = Page {
            cdp,
            session,
            context,
            events: Vec::new(),
        };
        page.set_viewport(1280, 800).await?;
        Ok(page)
    }
}

fn str_field(v: &Value, name: &str) -> anyhow::Result<String> {
    v.get(name)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("DevTools answer without {name}: {v}"))
}

/// One tab. Its browser context is disposed when it drops.
pub struct Page {
    cdp: Cdp,
    session: String,
    context: String,
    events: Vec<Value>,
}

impl Drop for Page {
    fn drop(&mut self) {
        let (cdp, context) = (self.cdp.clone(), self.context.clone());
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let _ = cdp
                    .call(
                        None,
                        "Target.disposeBrowserContext",
                        json!({ "browserContextId": context }),
                    )
                    .await;
            });
        }
    }
}

impl Page {
    async fn call(&self, method: &str, params: Value) -> anyhow::Result<Value> {
        self.cdp.call(Some(&self.session), method, params).await
    }

    /// Evaluates `expression` in the page (promises awaited) and returns its value as JSON.
    pub async fn eval(&self, expression: &str) -> anyhow::Result<Value> {
        let out = self
            .call(
                "Runtime.evaluate",
                json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
            )
            .await?;
        if let Some(ex) = out.get("exceptionDetails") {
            bail!("script failed: {ex}\n{expression}");
        }
        Ok(out.pointer("/result/value").cloned().unwrap_or(Value::Null))
    }

    /// Loads `url` and waits until the new document has loaded.
    pub async fn goto(&self, url: &str) -> anyhow::Result<()> {
        self.navigating(async {
            self.call("Page.navigate", json!({ "url": url })).await?;
            Ok(())
        })
        .await
    }

    /// Runs `action` (a click or key press that loads a page) and waits until the document
    /// it started has loaded.
    pub async fn navigating(
        &self,
        action: impl Future<Output = anyhow::Result<()>>,
    ) -> anyhow::Result<()> {
        // A mark on the current document: gone once another document replaces it.
        self.eval("window.__heraldMark = 1").await?;
        action.await?;
        self.wait_for(
            "typeof window.__heraldMark === 'undefined' && document.readyState === 'complete'",
        )
        .await
        .context("waiting for the next page to load")
    }

    /// Waits until `condition` (a JavaScript expression) is true.
    pub async fn wait_for(&self, condition: &str) -> anyhow::Result<()> {
        let start = Instant::now();
        loop {
            // A navigation in progress can make an evaluation fail; try again.
            if let Ok(Value::Bool(true)) = self.eval(&format!("!!({condition})")).await {
                return Ok(());
            }
            if start.elapsed() > WAIT {
                bail!(
                    "`{condition}` still false after {WAIT:?} on {}",
                    self.url().await.unwrap_or_default()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The page's address.
    pub async fn url(&self) -> anyhow::Result<String> {
        Ok(self
            .eval("location.href")
            .await?
            .as_str()
            .unwrap_or_default()
            .to_owned())
    }

    /// The text of the first element matching `selector` (empty when none).
    pub async fn text(&self, selector: &str) -> anyhow::Result<String> {
        let js = format!(
            "(document.querySelector({}) || {{}}).innerText || ''",
            js_str(selector)
        );
        Ok(self
            .eval(&js)
            .await?
            .as_str()
            .unwrap_or_default()
            .to_owned())
    }

    /// The text of the document inside the `<iframe name="{name}">`, read through the
    /// DevTools DOM, so it works for a `sandbox`ed frame, where no script runs and the page
    /// cannot reach in (Chromium may run such a frame in a process of its own: then its
    /// target is attached for the read). Empty when there is no such frame or document yet.
    pub async fn frame_text(&self, name: &str) -> anyhow::Result<String> {
        fn find<'a>(node: &'a Value, name: &str) -> Option<&'a Value> {
            let attrs = node["attributes"].as_array();
            let named = attrs.is_some_and(|a| {
                a.chunks(2)
                    .any(|kv| kv[0] == "name" && kv.get(1).is_some_and(|v| v == name))
            });
            if node["nodeName"] == "IFRAME" && named {
                return Some(node);
            }
            node["children"]
                .as_array()
                .into_iter()
                .flatten()
                .find_map(|c| find(c, name))
        }
        fn text(node: &Value, out: &mut String) {
            if node["nodeType"] == 3 {
                out.push_str(node["nodeValue"].as_str().unwrap_or_default());
            }
            if matches!(node["nodeName"].as_str(), Some("STYLE" | "SCRIPT" | "HEAD")) {
                return;
            }
            for c in node["children"].as_array().into_iter().flatten() {
                text(c, out);
            }
        }
        let whole = json!({ "depth": -1, "pierce": true });
        let doc = self.call("DOM.getDocument", whole.clone()).await?;
        let Some(frame) = find(&doc["root"], name) else {
            return Ok(String::new());
        };
        let mut out = String::new();
        if let Some(d) = frame.get("contentDocument") {
            text(d, &mut out);
            return Ok(out);
        }
        // Out of process: attach to the frame's own target, the one with the frame's id, else
        // the one out-of-process frame of this page.
        let Some(frame_id) = frame["frameId"].as_str() else {
            return Ok(out);
        };
        let tree = self.call("Page.getFrameTree", json!({})).await?;
        let main = tree["frameTree"]["frame"]["id"]
            .as_str()
            .unwrap_or_default();
        let targets = self.cdp.call(None, "Target.getTargets", json!({})).await?;
        let frames: Vec<&Value> = targets["targetInfos"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| t["type"] == "iframe" && t["parentFrameId"] == main)
            .collect();
        let target = frames
            .iter()
            .find(|t| t["targetId"] == frame_id)
            .or_else(|| {
                if frames.len() == 1 {
                    frames.first()
                } else {
                    None
                }
            });
        let Some(target_id) = target.and_then(|t| t["targetId"].as_str()) else {
            return Ok(out);
        };
        let attached = self
            .cdp
            .call(
                None,
                "Target.attachToTarget",
                json!({ "targetId": target_id, "flatten": true }),
            )
            .await?;
        let session = str_field(&attached, "sessionId")?;
        let doc = self
            .cdp
            .call(Some(&session), "DOM.getDocument", whole)
            .await;
        let _ = self
            .cdp
            .call(
                None,
                "Target.detachFromTarget",
                json!({ "sessionId": session }),
            )
            .await;
        text(&doc?["root"], &mut out);
        Ok(out)
    }

    /// Waits until the text of frame `name` ([`Page::frame_text`]) contains `needle`.
    pub async fn wait_for_frame_text(&self, name: &str, needle: &str) -> anyhow::Result<String> {
        let start = Instant::now();
        loop {
            let t = self.frame_text(name).await.unwrap_or_default();
            if t.contains(needle) {
                return Ok(t);
            }
            if start.elapsed() > WAIT {
                bail!("frame {name:?} still lacks {needle:?} after {WAIT:?}: {t:?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The whole page's visible text.
    pub async fn body_text(&self) -> anyhow::Result<String> {
        self.text("body").await
    }

    /// Clicks, with the mouse, the first element matching `selector` whose visible text is
    /// `text` (any text when `None`).
    pub async fn click(&self, selector: &str, text: Option<&str>) -> anyhow::Result<()> {
        let find = locate(selector, text);
        let at = self
            .eval(&format!(
                "(() => {{ const e = {find}; if (!e) return null; e.scrollIntoView({{block: 'center'}});
                   const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()"
            ))
            .await?;
        let (Some(x), Some(y)) = (
            at.get(0).and_then(Value::as_f64),
            at.get(1).and_then(Value::as_f64),
        ) else {
            bail!(
                "no element `{selector}` with text {text:?} on {}",
                self.url().await?
            );
        };
        for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 }),
            )
            .await?;
        }
        Ok(())
    }

    /// [`Page::click`] on a link or button that loads another page, waiting for it.
    pub async fn click_and_wait(&self, selector: &str, text: Option<&str>) -> anyhow::Result<()> {
        self.navigating(self.click(selector, text)).await
    }

    /// Types `value` into the form control labelled `label` (its `<label>` text), replacing
    /// what it held.
    pub async fn fill(&self, label: &str, value: &str) -> anyhow::Result<()> {
        let found = self
            .eval(&format!(
                "(() => {{ const c = {}; if (!c) return false; c.focus(); if (c.select) c.select(); return true; }})()",
                labelled(label)
            ))
            .await?;
        if found != Value::Bool(true) {
            bail!("no control labelled {label:?} on {}", self.url().await?);
        }
        // Delete the selection, then type as a keyboard would.
        self.call("Input.insertText", json!({ "text": "" })).await?;
        self.call("Input.insertText", json!({ "text": value }))
            .await?;
        Ok(())
    }

    /// Chooses a file for the file input labelled `label`, as a user picking `name` holding
    /// `content` would (the input's `files`, then its `change` event).
    pub async fn choose_file(&self, label: &str, name: &str, content: &str) -> anyhow::Result<()> {
        let found = self
            .eval(&format!(
                "(() => {{ const c = {}; if (!c || c.type !== 'file') return false;
                   const t = new DataTransfer();
                   t.items.add(new File([{}], {}, {{ type: {} }}));
                   c.files = t.files;
                   c.dispatchEvent(new Event('change', {{ bubbles: true }}));
                   return c.files.length === 1; }})()",
                labelled(label),
                js_str(content),
                js_str(name),
                js_str(if name.ends_with(".csv") {
                    "text/csv"
                } else {
                    ""
                }),
            ))
            .await?;
        if found != Value::Bool(true) {
            bail!("no file input labelled {label:?} on {}", self.url().await?);
        }
        Ok(())
    }

    /// The value of the form control labelled `label`.
    pub async fn value_of(&self, label: &str) -> anyhow::Result<String> {
        let v = self
            .eval(&format!("({} || {{}}).value", labelled(label)))
            .await?;
        Ok(v.as_str().unwrap_or_default().to_owned())
    }

    /// An attribute of the control labelled `label` (`None` when absent).
    pub async fn attribute_of(
        &self,
        label: &str,
        attribute: &str,
    ) -> anyhow::Result<Option<String>> {
        let v = self
            .eval(&format!(
                "(() => {{ const c = {}; return c ? c.getAttribute({}) : null; }})()",
                labelled(label),
                js_str(attribute)
            ))
            .await?;
        Ok(v.as_str().map(str::to_owned))
    }

    /// Presses a key: `Tab`, `Enter`, `Escape`, `Space` or `Shift+Tab`.
    pub async fn press(&self, key: &str) -> anyhow::Result<()> {
        let (shift, key) = match key.strip_prefix("Shift+") {
            Some(k) => (true, k),
            None => (false, key),
        };
        let (code, key_name, vk, text) = match key {
            "Tab" => ("Tab", "Tab", 9, ""),
            "Enter" => ("Enter", "Enter", 13, "\r"),
            "Escape" => ("Escape", "Escape", 27, ""),
            "Space" => ("Space", " ", 32, " "),
            other => bail!("no key {other:?} in Page::press"),
        };
        let modifiers = if shift { 8 } else { 0 };
        let mut down = json!({ "type": if text.is_empty() { "rawKeyDown" } else { "keyDown" },
            "key": key_name, "code": code, "windowsVirtualKeyCode": vk, "modifiers": modifiers });
        if !text.is_empty() {
            down["text"] = json!(text);
        }
        self.call("Input.dispatchKeyEvent", down).await?;
        self.call(
            "Input.dispatchKeyEvent",
            json!({ "type": "keyUp", "key": key_name, "code": code,
                    "windowsVirtualKeyCode": vk, "modifiers": modifiers }),
        )
        .await?;
        Ok(())
    }

    /// What has the keyboard focus: its tag, text or label, and whether a focus ring shows
    /// (an outline or box-shadow wider than zero, as `:focus-visible` styles draw it).
    pub async fn focused(&self) -> anyhow::Result<Focused> {
        let v = self
            .eval(
                "(() => { const e = document.activeElement; if (!e || e === document.body) return null;
                   const s = getComputedStyle(e);
                   const ring = (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0)
                     || (s.boxShadow && s.boxShadow !== 'none');
                   return { tag: e.tagName.toLowerCase(),
                            name: (e.getAttribute('aria-label') || e.innerText || e.value
                                   || (e.labels && e.labels[0] && e.labels[0].innerText) || '').trim(),
                            ring }; })()",
            )
            .await?;
        Ok(Focused {
            tag: v["tag"].as_str().unwrap_or_default().to_owned(),
            name: v["name"].as_str().unwrap_or_default().to_owned(),
            ring: v["ring"].as_bool().unwrap_or(false),
            nothing: v.is_null(),
        })
    }

    /// Sets the viewport (CSS pixels); under 500 px wide it is a phone's.
    pub async fn set_viewport(&self, width: u32, height: u32) -> anyhow::Result<()> {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 500 }),
        )
        .await?;
        Ok(())
    }

    /// Lets pages of `origin` write and read the clipboard (copy buttons), as a user who
    /// allowed it would, and keeps the tab focused as the clipboard requires.
    pub async fn grant_clipboard(&self, origin: &str) -> anyhow::Result<()> {
        self.cdp
            .call(
                None,
                "Browser.grantPermissions",
                json!({ "origin": origin, "browserContextId": self.context,
                        "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"] }),
            )
            .await?;
        self.call(
            "Emulation.setFocusEmulationEnabled",
            json!({ "enabled": true }),
        )
        .await?;
        Ok(())
    }

    /// Emulates `prefers-color-scheme: dark` (or light).
    pub async fn set_dark(&self, dark: bool) -> anyhow::Result<()> {
        self.call(
            "Emulation.setEmulatedMedia",
            json!({ "features": [{ "name": "prefers-color-scheme",
                                   "value": if dark { "dark" } else { "light" } }] }),
        )
        .await?;
        Ok(())
    }

    /// True when the document is wider than the viewport (the page scrolls sideways).
    pub async fn scrolls_sideways(&self) -> anyhow::Result<bool> {
        let v = self
            .eval("document.documentElement.scrollWidth > document.documentElement.clientWidth")
            .await?;
        Ok(v == Value::Bool(true))
    }

    /// Every address the page loaded (the document and its resources), from the
    /// Performance API.
    pub async fn loaded_urls(&self) -> anyhow::Result<Vec<String>> {
        let v = self
            .eval(
                "performance.getEntries().filter(e => e.entryType === 'navigation' || e.entryType === 'resource').map(e => e.name)",
            )
            .await?;
        Ok(v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default())
    }

    /// Errors the page reported since the last call: uncaught exceptions, `console.error`,
    /// and browser errors such as a Content-Security-Policy violation or a failed load.
    pub fn errors(&mut self) -> Vec<String> {
        self.events.extend(self.cdp.take_events(&self.session));
        let mut out = Vec::new();
        for e in self.events.drain(..) {
            match e["method"].as_str() {
                Some("Runtime.exceptionThrown") => {
                    out.push(format!("exception: {}", e["params"]["exceptionDetails"]));
                }
                Some("Runtime.consoleAPICalled") if e["params"]["type"] == "error" => {
                    out.push(format!("console.error: {}", e["params"]["args"]));
                }
                Some("Log.entryAdded") if e["params"]["entry"]["level"] == "error" => {
                    let entry = &e["params"]["entry"];
                    out.push(format!(
                        "{}: {} {}",
                        entry["source"],
                        entry["text"],
                        entry["url"].as_str().unwrap_or_default()
                    ));
                }
                _ => {}
            }
        }
        out
    }

    /// Saves a PNG of the whole page (not only the viewport) as `<dir>/<name>.png`, where
    /// `dir` is `HERALD_SCREENSHOT_DIR` or `target/screenshots`; returns its path.
    pub async fn screenshot(&self, name: &str) -> anyhow::Result<PathBuf> {
        let size = self
            .eval("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            .await?;
        let (w, h) = (
            size.get(0).and_then(Value::as_f64).unwrap_or(1280.0),
            size.get(1).and_then(Value::as_f64).unwrap_or(800.0),
        );
        let shot = self
            .call(
                "Page.captureScreenshot",
                json!({ "format": "png", "captureBeyondViewport": true,
                        "clip": { "x": 0, "y": 0, "width": w, "height": h.min(6000.0), "scale": 1 } }),
            )
            .await?;
        let data = base64::engine::general_purpose::STANDARD
            .decode(str_field(&shot, "data")?)
            .context("decoding the screenshot")?;
        let dir = screenshot_dir();
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, data).with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    }
}

impl Page {
    /// The checks every dashboard page passes in the browser tests: everything it loaded came
    /// from `origin`, it reported no error (script, console, Content-Security-Policy), and it
    /// does not scroll sideways at 1280 or 375 px, light or dark; a screenshot of each
    /// (`<name>-<width>-<light|dark>.png`). Panics on a failed check (it is for tests), and
    /// leaves the page at 1280 px, light.
    pub async fn check_page(&mut self, origin: &str, name: &str) {
        for url in self.loaded_urls().await.expect("loaded urls") {
            assert!(url.starts_with(origin), "{name}: {url} is not on {origin}");
        }
        assert_eq!(
            self.errors(),
            Vec::<String>::new(),
            "{name}: errors in the page"
        );
        for (width, dark) in [(1280, false), (375, false), (375, true), (1280, true)] {
            self.set_viewport(width, CHECK_HEIGHT)
                .await
                .expect("viewport");
            self.set_dark(dark).await.expect("colour scheme");
            assert!(
                !self.scrolls_sideways().await.expect("scroll width"),
                "{name}: scrolls sideways at {width} px"
            );
            let theme = if dark { "dark" } else { "light" };
            self.screenshot(&format!("{name}-{width}-{theme}"))
                .await
                .expect("screenshot");
        }
        self.set_viewport(1280, CHECK_HEIGHT)
            .await
            .expect("viewport");
        self.set_dark(false).await.expect("colour scheme");
    }
}

/// The viewport height of [`Page::check_page`] (its screenshots take the whole page anyway).
const CHECK_HEIGHT: u32 = 900;

/// What [`Page::focused`] found.
#[derive(Debug, Clone)]
pub struct Focused {
    pub tag: String,
    pub name: String,
    /// A focus ring is drawn.
    pub ring: bool,
    /// Nothing (the body) has the focus.
    pub nothing: bool,
}

fn screenshot_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("HERALD_SCREENSHOT_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../target")));
    target.join("screenshots")
}

/// A JavaScript string literal of `s`.
fn js_str(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

/// A JavaScript expression: the first element matching `selector` whose visible text
/// (trimmed) is `text`, or `null`.
fn locate(selector: &str, text: Option<&str>) -> String {
    match text {
        None => format!("document.querySelector({})", js_str(selector)),
        Some(t) => format!(
            "([...document.querySelectorAll({})].find(e => (e.innerText || e.value || '').trim() === {}) || null)",
            js_str(selector),
            js_str(t)
        ),
    }
}

/// A JavaScript expression: the form control whose `<label>` says `label`, or `null`.
fn labelled(label: &str) -> String {
    format!(
        "(([...document.querySelectorAll('label')].find(l => l.innerText.trim() === {0}) || {{}}).control
          || document.querySelector('[aria-label=' + JSON.stringify({0}) + ']'))",
        js_str(label)
    )
}
