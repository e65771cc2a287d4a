// Live updates for the jobdef dashboard: the one script it serves (no inline code).
// The server sends a "change" event over /events when the store changed; the page
// then fetches itself again and swaps in its [data-live] sections, at most once per
// DEBOUNCE_MS. While the tab is hidden the event stream is closed; when it shows
// again the stream reopens with the fingerprint of what the page shows ("since"),
// and the server answers at once with a change if the store moved meanwhile.
// Without this script every page still reads, and a reload shows the news.
(function () {
  "use strict";
  var DEBOUNCE_MS = 1000;
  var RETRY_MS = 3000;
  var badge = document.getElementById("live");
  if (!badge || !window.EventSource || !window.fetch) {
    return;
  }
  var source = null;
  var timer = null;
  var retry = null;

  function hidden() {
    return document.visibilityState === "hidden";
  }

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
        var swapped = true;
        document.querySelectorAll("[data-live]").forEach(function (section) {
          var twin = fresh.querySelector('[data-live="' + section.getAttribute("data-live") + '"]');
          if (!twin) { return; }
          if (busy(section)) {
            swapped = false;
          } else {
            section.replaceWith(document.importNode(twin, true));
          }
        });
        // The page now shows the state the fresh copy was rendered at: a stream
        // opened from now on compares with that (unless a section was kept).
        var freshBadge = fresh.getElementById("live");
        if (swapped && freshBadge && freshBadge.getAttribute("data-events")) {
          badge.setAttribute("data-events", freshBadge.getAttribute("data-events"));
        }
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
    if (source !== null || hidden()) { return; }
    source = new EventSource(badge.getAttribute("data-events"));
    source.addEventListener("change", schedule);
    source.onopen = function () { badge.textContent = "live"; };
    source.onerror = function () {
      // Open it again ourselves, with the "since" of what the page shows now: the
      // browser's own retry would send the one the page was first rendered at.
      close();
      badge.textContent = "reconnecting…";
      retry = window.setTimeout(function () { retry = null; open(); }, RETRY_MS);
    };
  }

  function close() {
    if (retry !== null) {
      window.clearTimeout(retry);
      retry = null;
    }
    if (source !== null) {
      source.close();
      source = null;
    }
  }

  document.addEventListener("visibilitychange", function () {
    if (hidden()) {
      close();
      badge.textContent = "paused while hidden";
    } else {
      open();
    }
  });
  if (hidden()) {
    badge.textContent = "paused while hidden";
  } else {
    open();
  }
})();
