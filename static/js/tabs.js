// Artifact tabs on the sample page: plain buttons, no framework.
document.addEventListener("click", (event) => {
  const tab = event.target.closest("[data-tab]");
  if (!tab) return;
  const bar = tab.closest(".tabs");
  const section = bar.parentElement;
  bar.querySelectorAll("[data-tab]").forEach((t) => {
    t.classList.toggle("active", t === tab);
    t.setAttribute("aria-selected", t === tab ? "true" : "false");
  });
  section.querySelectorAll(":scope > .tabpanel").forEach((p) => p.classList.toggle("active", p.id === tab.dataset.tab));
});
