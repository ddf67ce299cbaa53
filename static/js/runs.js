// Runs: live logs and batch progress by polling server-rendered fragments with a cursor.
// Every inserted fragment is rendered and escaped by Django; nothing here builds HTML.
(() => {
  "use strict";
  const LOG_EVERY_MS = 500; // the worker appends to Redis at once: lines show within a second
  const BATCH_EVERY_MS = 1500;

  function followLog(pre) {
    let cursor = pre.dataset.cursor || "0";
    const url = pre.dataset.url;
    const tick = async () => {
      let response;
      try {
        response = await fetch(`${url}?cursor=${encodeURIComponent(cursor)}&fragment=1`, {
          headers: { "HX-Request": "true" }, credentials: "same-origin",
        });
      } catch (err) {
        setTimeout(tick, LOG_EVERY_MS * 4);
        return;
      }
      if (!response.ok) return; // 4xx: stop polling (the page shows the stored log on reload)
      const html = await response.text();
      if (html.trim()) {
        const nearBottom = pre.scrollHeight - pre.scrollTop - pre.clientHeight < 40;
        pre.insertAdjacentHTML("beforeend", html);
        if (nearBottom) pre.scrollTop = pre.scrollHeight;
      }
      cursor = response.headers.get("X-Log-Cursor") || cursor;
      const status = response.headers.get("X-Run-Status");
      const badge = pre.closest("[data-run]")?.querySelector("[data-run-status]");
      if (badge && status) { badge.textContent = status; badge.className = `badge run-${status}`; }
      if (response.headers.get("X-Log-Done") === "1") {
        if (pre.dataset.reloadWhenDone === "1") setTimeout(() => window.location.reload(), 800);
        return;
      }
      setTimeout(tick, LOG_EVERY_MS);
    };
    tick();
  }

  function followBatch(box) {
    const tick = async () => {
      let response;
      try {
        response = await fetch(box.dataset.url, { headers: { "HX-Request": "true" }, credentials: "same-origin" });
      } catch (err) {
        setTimeout(tick, BATCH_EVERY_MS * 3);
        return;
      }
      if (!response.ok) return;
      box.innerHTML = await response.text();
      if (response.headers.get("X-Batch-Done") !== "1") setTimeout(tick, BATCH_EVERY_MS);
    };
    setTimeout(tick, BATCH_EVERY_MS);
  }

  document.querySelectorAll("pre[data-run-log]").forEach(followLog);
  document.querySelectorAll("[data-batch-progress]").forEach(followBatch);
})();
