// cloudcore console: a little progressive enhancement, no build step.
// - [data-autosubmit] selects submit their form on change;
// - buttons with [data-confirm] ask before a destructive action;
// - elements with [data-refresh="N"] and an id reload their content every N seconds from the
//   same page (so progress shows without reloading), and stop once nothing inside is [data-busy]
//   when they also carry [data-refresh-while-busy].
(function () {
  "use strict";
  document.addEventListener("change", function (ev) {
    var el = ev.target;
    if (el.matches && el.matches("[data-autosubmit]") && el.form) { el.form.submit(); }
  });
  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest ? ev.target.closest("[data-confirm]") : null;
    if (btn && !window.confirm(btn.getAttribute("data-confirm"))) { ev.preventDefault(); }
  });
  function refresh(el) {
    var seconds = parseFloat(el.getAttribute("data-refresh")) || 5;
    var whileBusy = el.hasAttribute("data-refresh-while-busy");
    var timer = window.setInterval(function () {
      if (whileBusy && !el.querySelector("[data-busy]")) { window.clearInterval(timer); return; }
      fetch(window.location.href, {headers: {"X-Requested-With": "fetch"}, credentials: "same-origin"})
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (!html) { return; }
          var doc = new DOMParser().parseFromString(html, "text/html");
          var fresh = doc.getElementById(el.id);
          if (fresh) { el.innerHTML = fresh.innerHTML; }
        })
        .catch(function () { /* keep the last content; try again next tick */ });
    }, seconds * 1000);
  }
  document.addEventListener("DOMContentLoaded", function () {
    // Marks the page as enhanced: the live refresh is wired (the browser tests look for it).
    document.documentElement.setAttribute("data-console-js", "live");
    document.querySelectorAll("[data-refresh][id]").forEach(refresh);
  });
})();
