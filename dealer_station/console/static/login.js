"use strict";
document.getElementById("login").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const r = await DS.post("/api/login", {name: document.getElementById("name").value,
                                         password: document.getElementById("password").value});
  if (r.status !== 200) {
    document.getElementById("error").textContent = r.data.error || `error ${r.status}`;
    return;
  }
  const next = new URLSearchParams(location.search).get("next");
  // only a page of ours: never an address given in the link
  location.href = ["/pit", "/dealer"].includes(next) ? next :
    (r.data.role === "supervisor" ? "/pit" : "/dealer");
});
