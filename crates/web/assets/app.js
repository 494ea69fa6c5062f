// Herald dashboard enhancements. Every page works without this file; it adds the mobile menu,
// dialogs, in-page confirmations, copy buttons, "select all" and busy buttons.
// No inline script anywhere (CSP script-src 'self').
(function () {
  "use strict";

  function on(root, selector, event, handler) {
    root.addEventListener(event, function (e) {
      var el = e.target.closest(selector);
      if (el && root.contains(el)) handler(e, el);
    });
  }

  // Mobile menu
  on(document, "[data-menu]", "click", function (_, button) {
    var sidebar = button.closest(".sidebar");
    var open = sidebar.classList.toggle("open");
    button.setAttribute("aria-expanded", open ? "true" : "false");
  });

  // Dialogs: buttons with data-dialog="<id>" open them; data-close closes; Escape is native.
  on(document, "[data-dialog]", "click", function (_, button) {
    var dialog = document.getElementById(button.getAttribute("data-dialog"));
    if (dialog && dialog.showModal) {
      dialog.showModal();
      var first = dialog.querySelector("input:not([type=hidden]), select, textarea");
      if (first) first.focus();
    }
  });
  on(document, "[data-close]", "click", function (_, button) {
    var dialog = button.closest("dialog");
    if (dialog) dialog.close();
  });
  document.querySelectorAll("dialog[data-open]").forEach(function (d) {
    if (d.showModal) d.showModal();
    var invalid = d.querySelector("[aria-invalid=true]");
    if (invalid) invalid.focus();
  });

  // In-page confirmation: a form with data-confirm asks in a dialog before it posts.
  var confirmed = new WeakSet();
  document.addEventListener("submit", function (e) {
    var form = e.target;
    if (!form.hasAttribute("data-confirm") || confirmed.has(form)) return;
    e.preventDefault();
    var dialog = document.createElement("dialog");
    dialog.setAttribute("aria-labelledby", "confirm-text");
    var text = document.createElement("p");
    text.id = "confirm-text";
    text.textContent = form.getAttribute("data-confirm");
    var actions = document.createElement("div");
    actions.className = "dialog-actions";
    var cancel = document.createElement("button");
    cancel.type = "button";
    cancel.className = "btn ghost";
    cancel.textContent = "Cancel";
    var ok = document.createElement("button");
    ok.type = "button";
    ok.className = "btn danger";
    ok.textContent = form.getAttribute("data-confirm-button") || "Confirm";
    actions.append(cancel, ok);
    var body = document.createElement("div");
    body.className = "stack";
    body.append(text, actions);
    dialog.append(body);
    document.body.append(dialog);
    cancel.addEventListener("click", function () { dialog.close(); });
    dialog.addEventListener("close", function () { dialog.remove(); });
    ok.addEventListener("click", function () {
      confirmed.add(form);
      var confirm = document.createElement("input");
      confirm.type = "hidden";
      confirm.name = "confirm";
      confirm.value = "yes";
      form.append(confirm);
      dialog.close();
      form.requestSubmit ? form.requestSubmit() : form.submit();
    });
    dialog.showModal();
    cancel.focus();
  }, true);

  // Busy buttons: a submitted form's button says it is working, and a second click does nothing.
  document.addEventListener("submit", function (e) {
    var form = e.target;
    if (e.defaultPrevented) return;
    if (form.dataset.submitted === "1") { e.preventDefault(); return; }
    if (!form.hasAttribute("data-busy")) return;
    form.dataset.submitted = "1";
    var button = e.submitter || form.querySelector("[type=submit]");
    if (button) button.setAttribute("aria-busy", "true");
  });

  // Copy buttons: data-copy="<id of the element holding the value>".
  on(document, "[data-copy]", "click", function (_, button) {
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source || !navigator.clipboard) return;
    var label = button.textContent;
    function say(text) {
      button.textContent = text;
      setTimeout(function () { button.textContent = label; }, 1500);
    }
    navigator.clipboard.writeText(source.textContent.trim()).then(function () {
      say("Copied");
    }, function () {
      // The browser refused the clipboard: select the value so Ctrl+C copies it.
      var range = document.createRange();
      range.selectNodeContents(source);
      var selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      say("Press Ctrl+C");
    });
  });

  // "Select all rows on this page"
  on(document, "[data-select-all]", "change", function (_, box) {
    var name = box.getAttribute("data-select-all");
    box.closest("form").querySelectorAll('input[name="' + name + '"]').forEach(function (b) {
      b.checked = box.checked;
    });
  });

  // A time chosen in the browser's time zone (datetime-local with data-utc="<hidden input>"):
  // the hidden input gets the instant in ISO 8601 UTC, and the hint says it in both zones.
  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function utcWords(d) {
    return d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate()) +
      " " + pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes()) + " UTC";
  }
  var zone = "";
  try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (_) { zone = ""; }
  document.querySelectorAll("input[data-utc]").forEach(function (input) {
    var hidden = document.getElementById(input.getAttribute("data-utc"));
    var words = input.closest(".field").querySelector("[data-utc-words]");
    function update() {
      var d = input.value ? new Date(input.value) : null;
      var ok = d && !isNaN(d.getTime());
      if (hidden) hidden.value = ok ? d.toISOString() : "";
      if (words) {
        words.textContent = ok
          ? "Your time" + (zone ? " (" + zone + ")" : "") + "; that is " + utcWords(d) + "."
          : "In your time zone" + (zone ? " (" + zone + ")" : "") + "; shown in UTC too once chosen.";
      }
    }
    input.addEventListener("input", update);
    input.addEventListener("change", update);
    update();
  });
  // Times printed in UTC (time[data-local]) also in the browser's time zone.
  document.querySelectorAll("time[data-local]").forEach(function (t) {
    var d = new Date(t.getAttribute("datetime"));
    if (isNaN(d.getTime())) return;
    t.textContent = d.toLocaleString([], { dateStyle: "medium", timeStyle: "short" }) +
      (zone ? " " + zone : "") + " (" + utcWords(d) + ")";
  });

  // Charts wider than a narrow screen show their newest days (the right end), on load and
  // when the window narrows (a phone turned).
  function scrollToEnds() {
    document.querySelectorAll("[data-scroll-end]").forEach(function (box) {
      box.scrollLeft = box.scrollWidth;
    });
  }
  scrollToEnds();
  window.addEventListener("resize", scrollToEnds);

  // Toasts leave after a few seconds.
  document.querySelectorAll(".toast").forEach(function (t) {
    setTimeout(function () { t.classList.add("hidden"); }, 4000);
  });
})();
