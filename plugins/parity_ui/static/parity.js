// The Parity page runs inside an iframe of the Airflow UI, whose sandbox forbids
// navigating the top window. A link out of the Parity page (to a DAG run, say) is
// therefore followed by the Airflow UI itself: the path is pushed onto the top
// window's history and its router is told with a popstate event (same origin, so
// allowed). Outside an iframe, and for the Parity page's own links, links behave
// as usual.
(function () {
  "use strict";
  var own = document.currentScript ? new URL("..", document.currentScript.src).pathname : "/parity/";

  function topWindow() {
    try {
      if (window.top === window || window.top.location.origin !== window.location.origin) {
        return null;
      }
      return window.top;
    } catch (error) {
      return null;
    }
  }

  document.addEventListener("click", function (event) {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey ||
        event.shiftKey || event.altKey) {
      return;
    }
    var link = event.target.closest ? event.target.closest("a[href]") : null;
    if (!link || link.closest("svg") || link.hasAttribute("target")) {
      return;
    }
    var url = new URL(link.getAttribute("href"), window.location.href);
    if (url.origin !== window.location.origin || url.pathname.indexOf(own) === 0) {
      return;
    }
    var top = topWindow();
    if (!top) {
      return;
    }
    event.preventDefault();
    var state = top.history.state || {};
    var index = typeof state.idx === "number" ? state.idx + 1 : 0;
    top.history.pushState(
      { usr: null, key: Math.random().toString(36).slice(2, 10), idx: index }, "",
      url.pathname + url.search + url.hash
    );
    top.dispatchEvent(new PopStateEvent("popstate", { state: top.history.state }));
  });
})();
