// Applies the remembered (or the system's) colour theme before the page paints; console.js
// wires the toggle. Bootstrap's dark mode is the data-bs-theme attribute on <html>.
(function () {
  "use strict";
  var stored = null;
  try { stored = window.localStorage.getItem("cloudcore-theme"); } catch (e) { /* private mode */ }
  var dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  document.documentElement.setAttribute("data-bs-theme", stored || (dark ? "dark" : "light"));
})();
