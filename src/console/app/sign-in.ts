// The sign-in page's script: posts {token} as JSON to /console/session
// (same origin, so the answer's HttpOnly cookie is kept by the browser), then
// loads the console. The token stays in the password field and this request's
// body: never in a URL, never in page storage.
const form = document.getElementById("sign-in") as HTMLFormElement | null;
const errorLine = document.getElementById("sign-in-error");

form?.addEventListener("submit", async (event) => {
  event.preventDefault();
  const data = new FormData(form);
  const body = JSON.stringify({ token: String(data.get("token") ?? "") });
  if (errorLine) errorLine.textContent = "";
  try {
    const response = await fetch("/console/session", {
      method: "POST",
      credentials: "same-origin",
      headers: { "content-type": "application/json" },
      body,
    });
    if (response.status === 204) {
      form.reset();
      // /console now answers with the application (the session cookie is set); the hash picks the page.
      location.reload();
      return;
    }
    const answer = (await response.json().catch(() => ({}))) as { message?: string };
    if (errorLine)
      errorLine.textContent =
        response.status === 401
          ? "That is neither the API token nor a live named token."
          : (answer.message ?? `Sign-in failed (${response.status}).`);
  } catch (err) {
    if (errorLine) errorLine.textContent = `Sign-in failed: ${(err as Error).message}`;
  }
});
