// The operator console's entry point (contract section 16): renders the
// application (app.tsx) with Preact (3 KB; hooks, no build-time framework)
// into the page /console serves. Pages live in pages/, their parts in
// components/, the hash router in router.ts; every call goes through the
// project's typed client (api.ts).
import { render } from "preact";
import { App } from "./app";

const root = document.getElementById("app");
if (root) {
  root.replaceChildren();
  render(<App />, root);
}
