// Hover details for the timeline, and a zoom that widens the drawing inside its scroll box.
(function () {
  "use strict";
  var tip = document.getElementById("tip");
  document.addEventListener("mouseover", function (ev) {
    var el = ev.target.closest ? ev.target.closest("[data-tip]") : null;
    if (!el) { tip.style.display = "none"; return; }
    tip.textContent = el.getAttribute("data-tip");
    tip.style.display = "block";
  });
  document.addEventListener("mousemove", function (ev) {
    if (tip.style.display !== "block") { return; }
    var x = ev.clientX + 14, y = ev.clientY + 14;
    if (x + tip.offsetWidth > window.innerWidth) { x = ev.clientX - tip.offsetWidth - 10; }
    if (y + tip.offsetHeight > window.innerHeight) { y = ev.clientY - tip.offsetHeight - 10; }
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  });
  var zoom = document.getElementById("zoom");
  var svg = document.getElementById("timeline");
  if (zoom && svg) {
    zoom.addEventListener("input", function () { svg.style.width = zoom.value + "%"; });
  }
  // What rendered, for whoever checks the page (the headless browser test reads this).
  document.body.setAttribute("data-rendered", JSON.stringify({
    holds: document.querySelectorAll("#timeline .hold").length,
    overlaps: document.querySelectorAll("#timeline .overlap").length,
    faults: document.querySelectorAll("#timeline .fault").length,
    accesses: document.querySelectorAll("#timeline .acc").length,
    plots: document.querySelectorAll("svg.plot").length
  }));
})();
