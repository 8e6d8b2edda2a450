// Live values without reloading: every few seconds the page's <main> is fetched again
// (the server answers a request carrying X-Console-Fragment with <main>'s content only)
// and swapped in, unless the user is typing in one of its forms.
(function () {
  const main = document.querySelector("main");
  const seconds = Number(main && main.dataset.refresh);
  if (!seconds) return;
  async function refresh() {
    const active = document.activeElement;
    if (active && main.contains(active) && active.matches("input, select, textarea")) return;
    try {
      const response = await fetch(location.href, { headers: { "X-Console-Fragment": "1" } });
      if (response.ok) {
        main.innerHTML = await response.text();
        main.dataset.refreshed = String(Date.now());
      }
    } catch (error) {
      // the console or the cluster is away for a moment; the next round tries again
    }
  }
  setInterval(refresh, seconds * 1000);
})();
