// mmd review page: keys (j/k next/previous, a accept, r reject, e edit, x select), select-all, budget counters,
// and live updates from the daemon's events (Server-Sent Events, no polling).
// No framework, no build step, nothing fetched from elsewhere. Every action is a plain form: without this file
// the page works the same, by mouse.
(function () {
  "use strict";

  function bindSelectAll() {
    var all = document.getElementById("select-all");
    if (!all) return;
    all.addEventListener("change", function () {
      document.querySelectorAll("input.pick").forEach(function (box) { box.checked = all.checked; });
    });
  }

  // --- the cards and the keys ---------------------------------------------------------------------

  function cards() { return Array.prototype.slice.call(document.querySelectorAll("article.candidate")); }

  function cardId(card) { return card.id.slice("cand-".length); }

  function current() { return document.querySelector("article.candidate.current"); }

  function choose(card) {
    if (!card) return;
    var was = current();
    if (was) was.classList.remove("current");
    card.classList.add("current");
    card.tabIndex = -1;  // focusable by script, not a tab stop
    card.focus({ preventScroll: true });
    card.scrollIntoView({ block: "nearest" });
  }

  function neighbour(card) {  // the card to go on with once `card` is decided: the next, else the previous
    var all = cards(), at = all.indexOf(card);
    return all[at + 1] || all[at - 1] || null;
  }

  function withParams(path, params) {  // `path` (a local URL) with `params` set, replacing the same names
    var url = new URL(path, location.origin);
    Object.keys(params).forEach(function (k) {
      if (params[k]) url.searchParams.set(k, params[k]); else url.searchParams.delete(k);
    });
    return url.pathname + url.search;
  }

  function typing(target) {
    return target && (/^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName) || target.isContentEditable);
  }

  function onKey(event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    var key = event.key, all = cards(), card = current();
    if (!all.length) {  // a note's or a candidate's page: `e` edits it
      var edit = document.querySelector("a.do-edit");
      if (key === "e" && edit) { event.preventDefault(); edit.click(); }
      return;
    }
    if (key === "j" || key === "k") {
      event.preventDefault();
      var at = all.indexOf(card);
      choose(card ? all[Math.max(0, Math.min(all.length - 1, at + (key === "j" ? 1 : -1)))] : all[0]);
      return;
    }
    var act = { a: ".do-accept", r: ".do-reject", e: ".do-edit", x: "input.pick" }[key];
    if (!act) return;
    event.preventDefault();
    if (!card) { choose(all[0]); return; }  // the first key shows which card the next one acts on
    card.querySelector(act).click();
  }

  function onSubmit(event) {  // a decision from a card: come back to the card after it
    var form = event.target;
    if (form.getAttribute("id") !== "decide" || !event.submitter) return;  // (form.id: its fields named "id")
    var card = event.submitter.closest("article.candidate"), next = card && neighbour(card);
    var back = form.querySelector("input[name=back]");
    back.value = withParams(back.value, { at: next ? cardId(next) : "", next: "" });
  }

  function onClick(event) {  // opening a card's page: it comes back here, to this card (or the next one)
    var link = event.target.closest && event.target.closest("article.candidate a");
    if (!link) return;
    var card = link.closest("article.candidate"), next = neighbour(card);
    var here = withParams(location.pathname + location.search, { at: cardId(card), next: next ? cardId(next) : "",
                                                                  flash: "" });
    link.href = withParams(link.getAttribute("href"), { back: here });
  }

  function restoreFocus(id, index) {  // after a reload or a refresh: the card named, else the one at its place
    var all = cards();
    if (!all.length) return;
    var found = id && document.getElementById("cand-" + id);
    if (found) { choose(found); return; }
    if (index !== undefined && index >= 0) choose(all[Math.min(index, all.length - 1)]);
  }

  function focusFromUrl() {
    var params = new URLSearchParams(location.search), at = params.get("at"), next = params.get("next");
    if (at && document.getElementById("cand-" + at)) restoreFocus(at);
    else if (next) restoreFocus(next);
    else if (at) restoreFocus(null, 0);
  }

  // --- budget counters -------------------------------------------------------------------------------

  function count(area) {
    var out = area.form && area.form.querySelector("output.count");
    if (!out) return;
    var chars = Array.from(area.value.replace(/\r\n/g, "\n")).length;  // code points, as the budget counts them
    var budget = parseInt(area.dataset.budget, 10);
    var own = area.form.querySelector("input.budget");
    if (own && parseInt(own.value, 10) > 0) budget = parseInt(own.value, 10);
    var into = area.form.querySelector("select[name=into]"), option = into && into.selectedOptions[0];
    var noteChars = option ? parseInt(option.dataset.chars, 10) : -1;
    if (noteChars >= 0) {
      var total = noteChars + 2 + chars;
      out.textContent = total + " characters once appended to " + option.value + " (its budget grows to fit)";
      out.classList.remove("over");
      return;
    }
    out.textContent = chars + " / " + budget + " characters" + (chars > budget ? " — " + (chars - budget) +
      " over the write budget: the write will be refused" : "");
    out.classList.toggle("over", chars > budget);
  }

  function bindCounters() {
    document.querySelectorAll("textarea.counted").forEach(function (area) {
      var again = function () { count(area); };
      area.addEventListener("input", again);
      area.form.querySelectorAll("select[name=into], input.budget").forEach(function (el) {
        el.addEventListener("input", again);
        el.addEventListener("change", again);
      });
      again();
    });
  }

  // --- live updates ------------------------------------------------------------------------------------

  function editing() {
    var content = document.getElementById("content");
    var active = document.activeElement;
    if (active && content.contains(active) && /^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName)) return true;
    if (content.querySelector("details[open], form.edit-form")) return true;
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
        var was = current(), id = was && cardId(was), index = cards().indexOf(was);
        document.getElementById("content").innerHTML = fresh.innerHTML;
        var rev = doc.body.getAttribute("data-rev");
        document.body.setAttribute("data-rev", rev);
        var shown = document.getElementById("rev");
        if (shown) shown.textContent = rev;
        document.getElementById("stale").hidden = true;
        bindSelectAll();
        if (was) restoreFocus(id, index);
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
    bindCounters();
    document.addEventListener("keydown", onKey);
    document.addEventListener("submit", onSubmit);
    document.addEventListener("click", onClick, true);
    document.addEventListener("focusin", function (event) {
      var card = event.target.closest && event.target.closest("article.candidate");
      if (card && card !== current()) { var was = current(); if (was) was.classList.remove("current");
        card.classList.add("current"); }
    });
    focusFromUrl();
    listen();
  });
})();
