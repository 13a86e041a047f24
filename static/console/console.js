// cloudcore console: a little progressive enhancement over Bootstrap and htmx, no build step.
// - [data-autosubmit] selects submit their form on change;
// - buttons with [data-confirm] ask before a destructive action;
// - [data-theme-toggle] switches light/dark mode (remembered in localStorage);
// - live regions are htmx: hx-get + hx-trigger="every 2s" on an element whose view answers an
//   htmx request with just that fragment (console/views.py: _page's fragments), so a page
//   updates while work runs without a reload.
(function () {
  "use strict";
  document.addEventListener("change", function (ev) {
    var el = ev.target;
    if (el.matches && el.matches("[data-autosubmit]") && el.form) { el.form.submit(); }
  });
  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest ? ev.target.closest("[data-confirm]") : null;
    if (btn && !window.confirm(btn.getAttribute("data-confirm"))) { ev.preventDefault(); return; }
    var toggle = ev.target.closest ? ev.target.closest("[data-theme-toggle]") : null;
    if (toggle) {
      var root = document.documentElement;
      var next = root.getAttribute("data-bs-theme") === "dark" ? "light" : "dark";
      root.setAttribute("data-bs-theme", next);
      try { window.localStorage.setItem("cloudcore-theme", next); } catch (e) { /* private mode */ }
    }
  });
  document.addEventListener("DOMContentLoaded", function () {
    // Marks the page as enhanced: the live refresh is wired (the browser tests look for it).
    document.documentElement.setAttribute("data-console-js", window.htmx ? "live" : "static");
  });
})();
