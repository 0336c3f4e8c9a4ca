// A refusal or failure in words, announced to screen readers.
export function ErrorLine({ message }: { message?: string }) {
  return message ? (
    <p class="error" role="alert">
      {message}
    </p>
  ) : null;
}
