// The console's two HTML documents (contract section 16). Neither has an
// inline script or style: the Content-Security-Policy allows 'self' only, and
// every script is a file under /console/assets/ (built by
// scripts/build-console.ts into generated/console-assets.ts).

const HEAD = `<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="stylesheet" href="/console/assets/console.css">`;

/** Public: the sign-in form. method="post" so that, even without its script, the token never lands in a URL. */
export const SIGN_IN_PAGE = `<!doctype html>
<html lang="en">
<head>
<title>Sign in · Approved-execution console</title>
${HEAD}
<script type="module" src="/console/assets/sign-in.js"></script>
</head>
<body>
<main class="sign-in">
<h1>Approved-execution console</h1>
<form id="sign-in" method="post" action="/console/session" autocomplete="off">
<p><label for="token">API token <small>(API_TOKEN or a named token; decisions are recorded as its principal)</small></label>
<input id="token" name="token" type="password" required autocomplete="off" spellcheck="false"></p>
<p><button type="submit">Sign in</button></p>
<p id="sign-in-error" class="error" role="alert" aria-live="assertive"></p>
</form>
</main>
</body>
</html>
`;

/** Behind the session: the application shell the console script renders into. */
export const APP_PAGE = `<!doctype html>
<html lang="en">
<head>
<title>Approved-execution console</title>
${HEAD}
<script type="module" src="/console/assets/console.js"></script>
</head>
<body>
<div id="app"><p class="loading">Loading…</p></div>
</body>
</html>
`;
