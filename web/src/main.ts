import { mount } from 'svelte';
import './styles/tokens.css';
import './styles/base.css';
import App from './App.svelte';
import { applyTheme, savedTheme } from './lib/stores/theme';

applyTheme(savedTheme());
mount(App, { target: document.getElementById('app')! });
