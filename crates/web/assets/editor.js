// Herald template editor: line numbers and syntax highlighting for textarea[data-code] (HTML
// and {{variables}}), and the live preview frame refreshed as the user types. Hand-written,
// no dependency; the page works without it (a plain textarea and a Refresh preview button).
// The highlighting is a layer drawn under a transparent textarea, so the textarea stays the
// real, labelled control (typing, undo, selection, screen readers, Tab leaves the field).
(function () {
  "use strict";

  var HIGHLIGHT_LIMIT = 200000; // characters; past this the body is shown plain

  function esc(s) {
    return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }
  function span(cls, text) {
    return '<span class="tok-' + cls + '">' + esc(text) + "</span>";
  }

  // Where the tag starting at i ends (after its ">", quotes respected), or the text's end.
  function tagEnd(src, i) {
    var quote = null;
    for (var j = i + 1; j < src.length; j++) {
      var c = src[j];
      if (quote) { if (c === quote) quote = null; }
      else if (c === '"' || c === "'") quote = c;
      else if (c === ">") return j + 1;
    }
    return src.length;
  }

  var ATTR = /(\s+)([^\s=>\/"']+)(\s*=\s*)?("[^"]*"?|'[^']*'?|[^\s>"']+)?/y;

  function tag(text) {
    var head = /^<\/?[!A-Za-z][\w:.-]*/.exec(text);
    if (!head) return esc(text);
    var out = span("tag", head[0]);
    var i = head[0].length;
    while (i < text.length) {
      ATTR.lastIndex = i;
      var m = ATTR.exec(text);
      if (!m || m[0].length === 0) break;
      out += esc(m[1]) + span("attr", m[2]);
      if (m[3]) out += esc(m[3]);
      if (m[4]) out += m[3] ? value(m[4]) : span("attr", m[4]);
      i += m[0].length;
    }
    var rest = text.slice(i);
    return out + (rest ? span("tag", rest) : "");
  }

  // An attribute value, its {{variables}} marked.
  function value(v) {
    return v.split(/(\{\{[^}]*\}\})/).map(function (part, k) {
      return k % 2 ? span("var", part) : part ? span("str", part) : "";
    }).join("");
  }

  function highlight(src) {
    var out = "";
    var i = 0;
    var n = src.length;
    while (i < n) {
      var e;
      if (src.startsWith("<!--", i)) {
        e = src.indexOf("-->", i + 4);
        e = e < 0 ? n : e + 3;
        out += span("comment", src.slice(i, e));
      } else if (src.startsWith("{{", i)) {
        e = src.indexOf("}}", i + 2);
        if (e < 0) { out += esc("{{"); i += 2; continue; }
        e += 2;
        out += span("var", src.slice(i, e));
      } else if (src[i] === "<" && /[A-Za-z\/!]/.test(src[i + 1] || "")) {
        e = tagEnd(src, i);
        out += tag(src.slice(i, e));
      } else {
        var lt = src.indexOf("<", i + 1);
        var br = src.indexOf("{{", i + 1);
        e = Math.min(lt < 0 ? n : lt, br < 0 ? n : br);
        out += esc(src.slice(i, e));
      }
      i = e;
    }
    return out;
  }

  function enhance(area) {
    var wrap = document.createElement("div");
    wrap.className = "code-editor";
    var gutter = document.createElement("pre");
    gutter.className = "code-gutter";
    gutter.setAttribute("aria-hidden", "true");
    var stage = document.createElement("div");
    stage.className = "code-stage";
    var layer = document.createElement("pre");
    layer.className = "code-layer";
    layer.setAttribute("aria-hidden", "true");
    area.parentNode.insertBefore(wrap, area);
    stage.append(layer, area);
    wrap.append(gutter, stage);
    area.classList.add("code-input");

    var lines = 0;
    var queued = false;
    function draw() {
      queued = false;
      var src = area.value;
      var count = src.split("\n").length;
      if (count !== lines) {
        lines = count;
        var numbers = [];
        for (var k = 1; k <= count; k++) numbers.push(k);
        gutter.textContent = numbers.join("\n") + "\n";
      }
      // The trailing newline keeps the layer as tall as the textarea's last empty line.
      layer.innerHTML = (src.length > HIGHLIGHT_LIMIT ? esc(src) : highlight(src)) + "\n";
      sync();
    }
    function sync() {
      layer.scrollTop = area.scrollTop;
      layer.scrollLeft = area.scrollLeft;
      gutter.scrollTop = area.scrollTop;
    }
    area.addEventListener("input", function () {
      if (!queued) { queued = true; requestAnimationFrame(draw); }
    });
    area.addEventListener("scroll", sync);
    draw();
  }

  document.querySelectorAll("textarea[data-code]").forEach(enhance);

  // The preview frame: the form posts to it (Refresh preview) shortly after the user stops
  // typing; htmx refreshes the details beside it the same way.
  var refresh = document.getElementById("preview-refresh");
  var form = refresh && refresh.form;
  var frame = document.querySelector("iframe[name=preview-frame]");
  if (form && refresh && frame && form.requestSubmit) {
    var timer = null;
    var update = function () { form.requestSubmit(refresh); };
    form.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(update, 300);
    });
    if (!frame.getAttribute("src")) update();
    refresh.hidden = true;
  }
})();
