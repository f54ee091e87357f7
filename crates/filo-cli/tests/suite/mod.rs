mod dag;
