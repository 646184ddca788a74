import { post } from '../lib/api.js';
import { html, useState } from '../lib/html.js';
import { navigate } from '../lib/router.js';
import { Checkbox, Field, Form } from '../lib/ui.js';

export default function SignUp({ onSession }) {
  const [form, setForm] = useState({
    name: '',
    email: '',
    password: '',
    terms: false,
    privacy: false,
    marketing: false,
  });
  const set = (key) => (value) => setForm((f) => ({ ...f, [key]: value }));
  const submit = async () => {
    const session = await post('/api/console/sign-up', {
      email: form.email,
      password: form.password,
      name: form.name || undefined,
      termsAccepted: form.terms,
      privacyAccepted: form.privacy,
      marketingConsent: form.marketing,
    });
    onSession(session);
    navigate('/projects', { replace: true });
  };
  return html`<section class="auth-card">
    <h1>Create your Quarry account</h1>
    <${Form} onSubmit=${submit} submitLabel="Sign up" label="Sign up">
      <${Field} label="Name" value=${form.name} onInput=${set('name')} autocomplete="name" hint="Optional" />
      <${Field} label="Email" type="email" value=${form.email} onInput=${set('email')} autocomplete="email" required />
      <${Field}
        label="Password"
        type="password"
        value=${form.password}
        onInput=${set('password')}
        autocomplete="new-password"
        hint="At least 8 characters"
        required
      />
      <${Checkbox} label="I accept the terms of service" checked=${form.terms} onChange=${set('terms')} required />
      <${Checkbox} label="I accept the privacy policy" checked=${form.privacy} onChange=${set('privacy')} required />
      <${Checkbox} label="Send me product news (optional)" checked=${form.marketing} onChange=${set('marketing')} />
    </${Form}>
    <p>Already have an account? <a href="/sign-in">Sign in</a></p>
  </section>`;
}
