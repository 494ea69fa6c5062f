// The Activity page's live feed: new rows arrive by server-sent events (`data-stream`), or,
// when the browser has no EventSource or the server refuses the stream (too many open for the
// project), by asking `data-poll` every 5 seconds. Rows are rendered by the server; a row
// already on the page (same id) is never added twice. Without this script the page is a
// plain list that shows new entries on reload.
(function () {
  "use strict";
  var body = document.getElementById("activity-rows");
  if (!body || !body.dataset.stream) return;
  var status = document.getElementById("live-status");
  var gap = document.getElementById("live-gap");
  var after = body.dataset.after || "";
  var POLL_MS = 5000;
  var polling = null;

  function say(text) {
    if (status && status.textContent !== text) status.textContent = text;
  }

  function showGap() {
    if (gap) gap.hidden = false;
  }

  // Adds the rows of `html` (oldest first) at the top, newest ending first.
  function add(html) {
    var holder = document.createElement("tbody");
    holder.innerHTML = html;
    var rows = Array.prototype.slice.call(holder.children);
    rows.forEach(function (row) {
      var id = row.getAttribute("data-id");
      if (!id || document.getElementById(row.id)) return;
      var empty = document.getElementById("activity-empty");
      if (empty) empty.remove();
      body.insertBefore(row, body.firstChild);
      // Ids are UUID v7 in lowercase hex: their text order is their time order.
      if (id > after) after = id;
    });
  }

  function poll() {
    var url = body.dataset.poll + "&after=" + encodeURIComponent(after);
    fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (res) {
        if (!res.ok) throw new Error("status " + res.status);
        if (res.headers.get("X-Activity-More") === "true") showGap();
        return res.text();
      })
      .then(function (html) {
        add(html);
        say("Checking for new entries every 5 seconds.");
      })
      .catch(function () {
        say("Cannot reach the server; trying again in 5 seconds.");
      });
  }

  function startPolling() {
    if (polling) return;
    say("Checking for new entries every 5 seconds.");
    polling = window.setInterval(poll, POLL_MS);
  }

  if (!("EventSource" in window)) {
    startPolling();
    return;
  }
  var source = new EventSource(body.dataset.stream + "&after=" + encodeURIComponent(after));
  source.addEventListener("open", function () {
    say("Live: new entries appear as they happen.");
  });
  source.addEventListener("entry", function (e) {
    add(e.data);
  });
  source.addEventListener("gap", showGap);
  source.addEventListener("error", function () {
    if (source.readyState === EventSource.CLOSED) {
      // Refused (too many streams, or the server is stopping): poll instead.
      source.close();
      startPolling();
    } else {
      say("Reconnecting…");
    }
  });
})();
