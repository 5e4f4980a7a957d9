// crawlchain console: the page's live part is fetched again every few seconds and
// swapped in; a form with data-confirm asks first. Nothing else: the pages work without it.
(function () {
  "use strict";
  const live = document.getElementById("live");
  if (live && live.dataset.live) {
    const every = Number(live.dataset.every) || 2000;
    const url = new URL(live.dataset.live, window.location.href).toString();
    const refresh = async function () {
      try {
        const answer = await fetch(url, {credentials: "same-origin", cache: "no-store"});
        if (answer.status === 401 || answer.redirected) {
          window.location.assign("/console/login");
          return;
        }
        if (answer.ok) {
          live.innerHTML = await answer.text();
        }
      } catch (error) {
        // the server is restarting: try again at the next turn
      }
      window.setTimeout(refresh, every);
    };
    window.setTimeout(refresh, every);
  }
  document.addEventListener("submit", function (event) {
    const question = event.target.dataset && event.target.dataset.confirm;
    if (question && !window.confirm(question)) {
      event.preventDefault();
    }
  });
})();
