// Live import progress: poll the server-rendered fragment with a cursor (no framework).
// The fragment replaces the status block; new error rows arrive in a <template> and are appended.
(function () {
  "use strict";
  var live = document.getElementById("import-live");
  if (!live || !live.dataset.progressUrl) return;
  var url = live.dataset.progressUrl;
  var cursor = live.dataset.cursor || "0";
  var rows = document.getElementById("import-error-rows");
  var delay = 700;

  function poll() {
    fetch(url + "?cursor=" + encodeURIComponent(cursor), { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (resp) {
        if (!resp.ok) throw new Error("HTTP " + resp.status);
        var next = resp.headers.get("X-Cursor");
        var finished = resp.headers.get("X-Finished") === "1";
        var more = resp.headers.get("X-More") === "1";
        return resp.text().then(function (html) { return { html: html, next: next, finished: finished, more: more }; });
      })
      .then(function (r) {
        var box = document.createElement("div");
        box.innerHTML = r.html;  // server-rendered, autoescaped fragment
        var status = box.querySelector("#import-status");
        var old = document.getElementById("import-status");
        if (status && old) old.replaceWith(status);
        var tpl = box.querySelector("template#import-new-errors");
        if (tpl && rows) rows.appendChild(tpl.content.cloneNode(true));
        if (r.next !== null) cursor = r.next;
        if (r.finished) return;
        setTimeout(poll, r.more ? 0 : delay);
      })
      .catch(function () { setTimeout(poll, 3000); });
  }
  setTimeout(poll, delay);
})();
