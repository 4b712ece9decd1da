// mmd review page: select-all, and live updates from the daemon's events (Server-Sent Events, no polling).
// No framework, no build step, nothing fetched from elsewhere.
(function () {
  "use strict";

  function bindSelectAll() {
    var all = document.getElementById("select-all");
    if (!all) return;
    all.addEventListener("change", function () {
      document.querySelectorAll("input.pick").forEach(function (box) { box.checked = all.checked; });
    });
  }

  function editing() {
    var content = document.getElementById("content");
    var active = document.activeElement;
    if (active && content.contains(active) && /^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName)) return true;
    if (content.querySelector("details[open]")) return true;
    return Array.prototype.some.call(document.querySelectorAll("input.pick"), function (b) { return b.checked; });
  }

  var refreshing = false;
  var again = false;

  function refresh() {
    if (editing()) {
      document.getElementById("stale").hidden = false;
      return;
    }
    if (refreshing) { again = true; return; }
    refreshing = true;
    fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("content");
        if (!fresh || editing()) { document.getElementById("stale").hidden = false; return; }
        document.getElementById("content").innerHTML = fresh.innerHTML;
        var rev = doc.body.getAttribute("data-rev");
        document.body.setAttribute("data-rev", rev);
        var shown = document.getElementById("rev");
        if (shown) shown.textContent = rev;
        document.getElementById("stale").hidden = true;
        bindSelectAll();
        document.dispatchEvent(new CustomEvent("mmd:refreshed"));
      })
      .catch(function () { document.getElementById("stale").hidden = false; })
      .finally(function () {
        refreshing = false;
        if (again) { again = false; refresh(); }
      });
  }

  function listen() {
    if (!window.EventSource) return;
    var source = new EventSource("/events");
    var live = document.getElementById("live");
    source.onopen = function () { live.hidden = false; };
    source.onerror = function () { live.hidden = true; };
    ["memory/changed", "queue/added", "queue/decided", "memory/nudge"].forEach(function (topic) {
      source.addEventListener(topic, function () {
        if (topic === "memory/nudge") return;
        refresh();
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    bindSelectAll();
    listen();
  });
})();
