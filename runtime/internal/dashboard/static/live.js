// Keeps the element marked data-live fresh: every data-live milliseconds it
// fetches this page again and swaps in the new element (the one of the same
// id, else the one marked data-live). A fresh element no longer marked
// data-live (a job that stopped running) is swapped in and ends the polling.
// The page is whole without it (JavaScript off: reload to refresh). A 503
// (Redis unreachable) reloads the page, which then says so. A poll is
// skipped while a form field has focus, so a half-ticked confirmation is not
// wiped.
(function () {
  "use strict";
  var el = document.querySelector("[data-live]");
  if (!el) return;
  var every = parseInt(el.getAttribute("data-live"), 10) || 2000;
  var id = el.id;
  function busy() {
    var a = document.activeElement;
    return a && (a.tagName === "INPUT" || a.tagName === "SELECT");
  }
  function tick() {
    if (busy()) { setTimeout(tick, every); return; }
    fetch(location.href, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        // Redis is unreachable: load the page, which says so and retries.
        if (r.status === 503) { location.reload(); throw new Error(r.status); }
        if (!r.ok || r.redirected) throw new Error(r.status);
        return r.text();
      })
      .then(function (text) {
        var doc = new DOMParser().parseFromString(text, "text/html");
        var fresh = (id && doc.getElementById(id)) || doc.querySelector("[data-live]");
        if (fresh) { el.replaceWith(fresh); el = fresh; }
      })
      .catch(function () {})
      .then(function () { if (el.hasAttribute("data-live")) setTimeout(tick, every); });
  }
  setTimeout(tick, every);
})();
