// cloudcore console: a server's serial console in xterm.js, its VNC console in noVNC's RFB.
// The page (console/remote_consoles.py) carries the websocket URL of the console proxy, with the
// token the compute API minted, and the URLs of the vendored ES modules (static/vendor/); nothing
// here talks to the API. #console-status says connecting / connected / disconnected / failed
// (data-state), and window.cloudcoreConsole keeps the terminal or the RFB object for inspection.
const root = document.getElementById("remote-console");
const status = document.getElementById("console-status");

function setState(state, text) {
  status.dataset.state = state;
  status.textContent = text || state;
}

// The serial proxy is websockify: the guest's bytes come as binary frames; typed keys go back
// as binary frames too (UTF-8), as a terminal on a serial line would send them.
async function openSerial(url) {
  const [{ Terminal }, { FitAddon }] = await Promise.all([import(root.dataset.xterm), import(root.dataset.xtermFit)]);
  const term = new Terminal({ convertEol: true, cursorBlink: true, fontSize: 14, scrollback: 5000 });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open(document.getElementById("console-terminal"));
  fit.fit();
  window.addEventListener("resize", () => fit.fit());
  const socket = new WebSocket(url, ["binary"]);
  socket.binaryType = "arraybuffer";
  const encoder = new TextEncoder();
  socket.addEventListener("open", () => { setState("connected"); term.focus(); });
  socket.addEventListener("message", (ev) => {
    term.write(typeof ev.data === "string" ? ev.data : new Uint8Array(ev.data));
  });
  socket.addEventListener("close", (ev) => {
    setState(status.dataset.state === "connected" ? "disconnected" : "failed",
             status.dataset.state === "connected" ? "disconnected" : `failed (${ev.code})`);
  });
  term.onData((data) => { if (socket.readyState === WebSocket.OPEN) { socket.send(encoder.encode(data)); } });
  window.cloudcoreConsole = { kind: "serial", term, socket };
}

async function openVnc(url) {
  const { default: RFB } = await import(root.dataset.novnc);
  const rfb = new RFB(document.getElementById("console-vnc"), url, { wsProtocols: ["binary"] });
  rfb.scaleViewport = true;
  rfb.background = "#000";
  const keys = root.querySelector("[data-console-keys]");
  rfb.addEventListener("connect", () => { setState("connected"); if (keys) { keys.disabled = false; } });
  rfb.addEventListener("disconnect", (ev) => {
    setState(ev.detail.clean ? "disconnected" : "failed");
    if (keys) { keys.disabled = true; }
  });
  rfb.addEventListener("securityfailure", (ev) => setState("failed", `refused: ${ev.detail.reason || ev.detail.status}`));
  rfb.addEventListener("desktopname", (ev) => { root.dataset.desktopName = ev.detail.name; });
  if (keys) { keys.addEventListener("click", () => rfb.sendCtrlAltDel()); }
  window.cloudcoreConsole = { kind: "vnc", rfb };
}

const opened = root.dataset.kind === "serial" ? openSerial(root.dataset.websocketUrl) : openVnc(root.dataset.websocketUrl);
opened.catch((err) => { setState("failed", `failed: ${err.message || err}`); });
