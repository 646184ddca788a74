import { post } from '../lib/api.js';
import { html, useState } from '../lib/html.js';
import { navigate, safeNext } from '../lib/router.js';
import { Field, Form } from '../lib/ui.js';

export default function SignIn({ query, onSession }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const submit = async () => {
    onSession(await post('/api/console/sign-in', { email, password }));
    navigate(safeNext(query.get('next')) ?? '/projects', { replace: true });
  };
  return html`<section class="auth-card">
    <h1>Sign in to Quarry</h1>
    <${Form} onSubmit=${submit} submitLabel="Sign in" label="Sign in">
      <${Field} label="Email" type="email" value=${email} onInput=${setEmail} autocomplete="email" required autofocus />
      <${Field} label="Password" type="password" value=${password} onInput=${setPassword} autocomplete="current-password" required />
    </${Form}>
    <p>No account yet? <a href="/sign-up">Sign up</a></p>
    <p class="muted">Programs use API keys instead: see the <a href="/docs">API reference</a>.</p>
  </section>`;
}
