// The dashboard's one script: follows the page's event stream (server-sent events) and
// redraws the page's main part when something happened, and counts down to each probe.
(function () {
  "use strict";
  const main = document.getElementById("main");
  const stream = document.body.dataset.stream;
  let pending = null;
  function redraw() {
    if (pending !== null) return;
    pending = setTimeout(async function () {
      pending = null;
      // What a button was answered with stays said across the redraws that follow.
      const said = new URLSearchParams(location.search).get("said");
      const url = location.pathname + "?part=main" +
        (said ? "&said=" + encodeURIComponent(said) : "");
      const answer = await fetch(url, { credentials: "same-origin" });
      if (answer.ok) {
        // An event's JSON a person opened stays open across the redraw.
        const opened = new Set();
        for (const element of main.querySelectorAll("details[data-key][open]")) {
          opened.add(element.dataset.key);
        }
        main.innerHTML = await answer.text();
        for (const element of main.querySelectorAll("details[data-key]")) {
          if (opened.has(element.dataset.key)) element.open = true;
        }
        tick();
      }
    }, 100);
  }
  function tick() {
    const now = Date.now();
    for (const element of document.querySelectorAll("[data-until]")) {
      const left = Math.max(0, Math.round((Date.parse(element.dataset.until) - now) / 1000));
      element.textContent = "in " + durationSaid(left);
    }
  }
  // A duration as every view says it (application/durations.py duration_said): 42s,
  // 1m04s, 2h00m10s, 6d23h51m.
  function durationSaid(whole) {
    const two = (n) => String(n).padStart(2, "0");
    const days = Math.floor(whole / 86400);
    const hours = Math.floor((whole % 86400) / 3600);
    const minutes = Math.floor((whole % 3600) / 60);
    const seconds = whole % 60;
    if (days) return days + "d" + two(hours) + "h" + two(minutes) + "m";
    if (hours) return hours + "h" + two(minutes) + "m" + two(seconds) + "s";
    if (minutes) return minutes + "m" + two(seconds) + "s";
    return seconds + "s";
  }
  if (stream) {
    const source = new EventSource(stream);
    const live = document.getElementById("live");
    source.addEventListener("event", redraw);
    source.addEventListener("refresh", redraw);
    source.onopen = function () { if (live) live.textContent = "live"; };
    source.onerror = function () { if (live) live.textContent = "reconnecting..."; };
  }
  tick();
  setInterval(tick, 1000);
})();
