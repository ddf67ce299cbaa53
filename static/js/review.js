// Review pages: keyboard shortcuts, the diff toggle, expanding folded diff stretches, "tick all".
// Plain JS, no framework. Everything inserted comes from our server as rendered, escaped HTML.
(() => {
  "use strict";

  const typing = (el) => el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));

  function toggleDiff() {
    const body = document.querySelector("[data-diff-body]");
    if (body) body.hidden = !body.hidden;
  }

  function chooseVerdict(value, focusSelector) {
    const radio = document.querySelector(`#review-form input[name=verdict][value="${value}"]`);
    if (!radio) return;
    radio.checked = true;
    const target = document.querySelector(focusSelector);
    if (target) target.focus();
  }

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(document.activeElement)) return;
    switch (event.key) {
      case "n":
      case "j": {
        const next = document.querySelector("[data-next]");
        if (next) window.location.href = next.href;
        break;
      }
      case "k": {
        const previous = document.querySelector("[data-previous]") || document.querySelector("[data-next]");
        if (previous) window.location.href = previous.href;
        break;
      }
      case "d":
        toggleDiff();
        break;
      case "a":
        chooseVerdict("approve", "#review-form [data-record]");
        break;
      case "r":
        chooseVerdict("request_changes", "#review-form textarea[name=comment]");
        event.preventDefault(); // keep the "r" out of the comment box we just focused
        break;
      case "?": {
        const help = document.querySelector(".shortcuts");
        if (help) help.scrollIntoView({ behavior: "smooth" });
        break;
      }
      default:
        return;
    }
  });

  // Folded stretches: fetch the rows of that block as a fragment; without JS the link reloads the page expanded.
  document.addEventListener("click", async (event) => {
    const link = event.target.closest("a.expand[data-fold]");
    if (!link) return;
    event.preventDefault();
    const url = new URL(link.href, window.location.href);
    url.hash = "";
    url.searchParams.delete("expand");
    url.searchParams.set("fragment", "1");
    url.searchParams.set("block", link.dataset.fold);
    try {
      const response = await fetch(url, { headers: { "HX-Request": "true" }, credentials: "same-origin" });
      if (!response.ok) throw new Error(String(response.status));
      const tbody = link.closest("tbody");
      tbody.innerHTML = await response.text();
      tbody.classList.remove("folded");
    } catch (err) {
      window.location.href = link.href; // the server-rendered fallback
    }
  });

  document.addEventListener("change", (event) => {
    if (!event.target.matches("[data-check-all]")) return;
    const table = event.target.closest("table");
    table.querySelectorAll("tbody input[type=checkbox][name=sample]").forEach((box) => {
      box.checked = event.target.checked;
    });
  });
})();
