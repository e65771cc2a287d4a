// Live updates for the jobdef dashboard: the one script it serves (no inline code).
// The server sends a "change" event over /events when the store changed; the page
// then fetches itself again and swaps in its [data-live] sections, at most once per
// DEBOUNCE_MS. While the tab is hidden the event stream is closed. Without this
// script every page still reads, and a reload shows the news.
(function () {
  "use strict";
  var DEBOUNCE_MS = 1000;
  var badge = document.getElementById("live");
  if (!badge || !window.EventSource || !window.fetch) {
    return;
  }
  var source = null;
  var timer = null;

  function busy(section) {
    // Do not swap a section under the operator's hands: a ticked box or focus inside.
    return section.querySelector("input:checked") !== null || section.contains(document.activeElement);
  }

  function refresh() {
    timer = null;
    fetch(window.location.href, { credentials: "same-origin", headers: { "X-Jobdef-Live": "1" } })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (html === null) { return; }
        var fresh = new DOMParser().parseFromString(html, "text/html");
        document.querySelectorAll("[data-live]").forEach(function (section) {
          var twin = fresh.querySelector('[data-live="' + section.getAttribute("data-live") + '"]');
          if (twin && !busy(section)) {
            section.replaceWith(document.importNode(twin, true));
          }
        });
        badge.setAttribute("data-refreshed", String(Date.now()));
      })
      .catch(function () { /* the next change tries again */ });
  }

  function schedule() {
    if (timer === null) {
      timer = window.setTimeout(refresh, DEBOUNCE_MS);
    }
  }

  function open() {
    if (source !== null) { return; }
    source = new EventSource(badge.getAttribute("data-events"));
    source.addEventListener("change", schedule);
    source.onopen = function () {
      // A stream that opens again after a drop missed what changed meanwhile.
      if (badge.textContent === "reconnecting…") { schedule(); }
      badge.textContent = "live";
    };
    source.onerror = function () { badge.textContent = "reconnecting…"; };
  }

  function close() {
    if (source !== null) {
      source.close();
      source = null;
    }
    badge.textContent = "paused while hidden";
  }

  document.addEventListener("visibilitychange", function () {
    if (document.hidden) {
      close();
    } else {
      open();
      schedule(); // catch up on what happened while hidden
    }
  });
  if (!document.hidden) {
    open();
  }
})();
