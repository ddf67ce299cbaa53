// The chat panel: posts without reloading, streams replies (SSE), polls for
// tool results and other experts' messages. The server renders every
// message; this file only inserts fragments and appends streamed text with
// textContent (never innerHTML of LLM text).
(function () {
  "use strict";
  const panel = document.querySelector("[data-chat-panel]");
  if (!panel) return;
  const list = panel.querySelector(".chat-messages");
  const thread = panel.querySelector(".chat-thread");
  const streams = new Map();
  const POLL_MS = 3000;

  function csrf(form) {
    const input = form.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function lastId() { return thread ? parseInt(thread.dataset.lastId || "0", 10) : 0; }
  function bumpLastId(id) {
    if (thread && id > lastId()) thread.dataset.lastId = String(id);
  }

  function insertFragment(html) {
    const tpl = document.createElement("template");
    tpl.innerHTML = html;  // server-rendered, escaped fragment
    const empty = list.querySelector(".chat-empty");
    if (empty) empty.remove();
    for (const el of Array.from(tpl.content.children)) {
      const id = el.dataset ? parseInt(el.dataset.messageId || "0", 10) : 0;
      const existing = id ? document.getElementById("msg-" + id) : null;
      if (existing) {
        if (!existing.dataset.streamUrl) existing.replaceWith(el);  // a live one finishes via its stream
        else continue;
      } else {
        list.appendChild(el);
      }
      if (id) bumpLastId(id);
      if (el.dataset && el.dataset.streamUrl) startStream(el);
    }
  }

  async function refreshMessage(el) {
    const resp = await fetch(el.dataset.messageUrl, { headers: { "HX-Request": "true" } });
    if (!resp.ok) return;
    const tpl = document.createElement("template");
    tpl.innerHTML = await resp.text();
    const fresh = tpl.content.firstElementChild;
    if (fresh) el.replaceWith(fresh);
  }

  function startStream(el) {
    const id = el.dataset.messageId;
    if (streams.has(id)) return;
    const out = el.querySelector(".chat-live");
    const source = new EventSource(el.dataset.streamUrl);
    streams.set(id, source);
    source.addEventListener("delta", function (ev) {
      const text = JSON.parse(ev.data);
      out.append(text);  // a Text node: never parsed as HTML, and O(1) unlike textContent +=
      if (window.ksChatProbe) window.ksChatProbe(text);  // bench/chat_latency.py hooks in here
    });
    source.addEventListener("end", function () {
      source.close();
      streams.delete(id);
      delete el.dataset.streamUrl;
      refreshMessage(el);
    });
    // EventSource reconnects by itself after a drop, resuming at Last-Event-ID.
  }

  async function submit(form, submitter) {
    const body = new FormData(form);
    if (submitter && submitter.name) body.append(submitter.name, submitter.value);
    const buttons = form.querySelectorAll("button");
    buttons.forEach((b) => { b.disabled = true; });
    try {
      const resp = await fetch(form.action, {
        method: "POST", body: body, headers: { "HX-Request": "true", "X-CSRFToken": csrf(form) },
      });
      const html = await resp.text();
      if (resp.status === 204) return;
      if (!resp.ok) {
        showError(form, html);
        return;
      }
      insertFragment(html);
      const ta = form.querySelector("textarea[name=content]");
      if (ta && form.classList.contains("chat-form")) ta.value = "";
      const details = form.closest("details");
      if (details) details.open = false;
    } catch (err) {
      showError(form, "<p class=\"form-error chat-error\">The server could not be reached; nothing was sent.</p>");
    } finally {
      buttons.forEach((b) => { b.disabled = false; });
    }
  }

  function showError(form, html) {
    const old = form.querySelector(".chat-error");
    if (old) old.remove();
    const tpl = document.createElement("template");
    tpl.innerHTML = html;
    const el = tpl.content.firstElementChild || document.createTextNode("The request failed.");
    form.appendChild(el);
  }

  panel.addEventListener("submit", function (ev) {
    const form = ev.target;
    const action = form.getAttribute("action") || "";
    // New threads navigate (the page shows the new thread); everything else stays in place.
    if (!/\/chat\/(thread|message)\//.test(action)) return;
    ev.preventDefault();
    submit(form, ev.submitter);
  });

  async function poll() {
    if (!thread || !thread.dataset.messagesUrl || document.hidden) return;
    try {
      const resp = await fetch(thread.dataset.messagesUrl + "?after=" + lastId(), { headers: { "HX-Request": "true" } });
      if (resp.ok) {
        const html = (await resp.text()).trim();
        if (html) insertFragment(html);
        const last = parseInt(resp.headers.get("X-Last-Message-Id") || "0", 10);
        if (last) bumpLastId(last);
      }
    } catch (err) { /* offline for a moment: the next poll catches up */ }
  }

  panel.querySelectorAll("[data-stream-url]").forEach(startStream);
  if (thread && thread.dataset.messagesUrl) setInterval(poll, POLL_MS);
})();
